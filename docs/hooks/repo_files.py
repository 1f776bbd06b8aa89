"""MkDocs hook: repository files in the site, with links written as GitHub reads them.

The pages in ``docs/`` link to files elsewhere in the repository the way GitHub
resolves them (``../results/README.md``, ``../results/ablate.png``), so the same
Markdown reads right on GitHub and in the site. The site mounts those files at
their repository paths (``results/...``, ``benchmarks/README.md``,
``data/README.md``), and this hook rewrites every relative link that leaves
``docs/`` to the mounted copy. ``mkdocs build --strict`` then checks each link
as usual: a link to a repository file that is not mounted fails the build.

A mounted folder without a README gets a generated page listing its files, so a
link to the folder works too. Placeholders such as ``<root>`` in help texts and
docstrings are shown as text, not swallowed as unknown HTML tags.
"""
from __future__ import annotations

import posixpath
import re
from pathlib import Path

from mkdocs.structure.files import File, Files

#: Repository paths (files or folders) published in the site at the same path.
MOUNTS = ("results", "benchmarks/README.md", "data/README.md")

#: Inline links and images: ``](target)`` or ``](target "title")``.
_LINK = re.compile(r"(\]\()([^)\s]+)(\s+\"[^\"]*\")?\)")


def _root(config) -> Path:
    return Path(config.config_file_path).resolve().parent


def _docs_prefix(config) -> str:
    return Path(config.docs_dir).resolve().relative_to(_root(config)).as_posix()


def on_files(files: Files, config) -> Files:
    root = _root(config)
    for mount in MOUNTS:
        path = root / mount
        if not path.exists():
            raise FileNotFoundError(f"mkdocs hook: the mounted repository path {mount!r} does not exist")
        found = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for p in found:
            if "__pycache__" in p.parts:
                continue
            files.append(File(p.relative_to(root).as_posix(), src_dir=str(root), dest_dir=config.site_dir,
                              use_directory_urls=config.use_directory_urls))
        for folder in [path, *(p for p in path.rglob("*") if p.is_dir())] if path.is_dir() else []:
            rel = folder.relative_to(root).as_posix()
            if any((folder / name).is_file() for name in ("README.md", "index.md")):
                continue
            entries = sorted(p for p in folder.iterdir() if not p.name.startswith("."))
            lines = [f"# `{rel}/`", "", "Files of this repository folder:", ""]
            lines += [f"- [{p.name}{'/' if p.is_dir() else ''}]({p.name}{'/' if p.is_dir() else ''})" for p in entries]
            files.append(File.generated(config, f"{rel}/index.md", content="\n".join(lines) + "\n"))
    return files


def _repo_path(page_file: File, config) -> str:
    """The page's path in the repository (a docs page lives under docs/)."""
    if page_file.abs_src_path is None:  # a generated listing: it lives where it is shown
        return page_file.src_uri
    return Path(page_file.abs_src_path).resolve().relative_to(_root(config)).as_posix()


def on_page_markdown(markdown: str, page, config, files: Files) -> str:
    docs = _docs_prefix(config)
    here_repo = posixpath.dirname(_repo_path(page.file, config))
    here_site = posixpath.dirname(page.file.src_uri)

    def rewrite(match: re.Match) -> str:
        target = match.group(2)
        if target.startswith(("#", "/")) or re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
            return match.group(0)
        path, hash_, fragment = target.partition("#")
        if not path:
            return match.group(0)
        repo = posixpath.normpath(posixpath.join(here_repo, path))
        if repo.startswith(docs + "/"):
            site = repo[len(docs) + 1:]
        elif any(repo == m or repo.startswith(m + "/") for m in MOUNTS):
            site = repo
        else:
            return match.group(0)  # not published: mkdocs reports the link
        root = _root(config)
        if (root / repo).is_dir():  # a folder: its README, else the generated listing
            site = posixpath.join(site, "README.md" if (root / repo / "README.md").is_file() else "index.md")
        new = posixpath.relpath(site, here_site or ".")
        if new == path:
            return match.group(0)
        return f"{match.group(1)}{new}{hash_}{fragment}{match.group(3) or ''})"

    return _LINK.sub(rewrite, markdown)


# Help texts and docstrings written for a terminal use placeholders such as
# <root> or <name>; rendered as Markdown they become unknown HTML tags and
# vanish. Any bare tag (no attributes) that is not an element Markdown output
# uses bare, and that no tag with attributes in the page shares, is shown as text.
_HTML_ELEMENTS = frozenset("""
a abbr address article aside b bdi bdo blockquote br caption cite code col colgroup data dd del details
dfn div dl dt em figcaption figure footer h1 h2 h3 h4 h5 h6 header hgroup hr i ins kbd li main mark math
nav ol p pre q rp rt ruby s samp script section small span strong style sub summary sup svg table tbody
td template tfoot th thead time tr u ul var wbr
""".split())  # elements that Markdown output uses without attributes
_BARE_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9_]*)>")


def on_page_content(html: str, page, config, files: Files) -> str:
    with_attributes = set(re.findall(r"<([A-Za-z][A-Za-z0-9_-]*)\s", html))

    def escape(match: re.Match) -> str:
        name = match.group(2)
        if name.lower() in _HTML_ELEMENTS or name in with_attributes:
            return match.group(0)
        return f"&lt;{match.group(1)}{name}&gt;"

    return _BARE_TAG.sub(escape, html)
