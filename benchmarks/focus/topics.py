"""The benchmark's topics: keywords and where each topic's relevant set comes from.

The keywords were written down before any crawl was run with them and are not tuned
afterwards: they are the words a user who wants that part of the documentation would type.
The Django, Git, SQLite, httpd and Debian topics (issue #18) were written after reading only
each site's tables of contents and section lists (to choose the parts, not the words), and
committed before any crawl used them (commit "benchmarks/focus: issue #18 dev set"); they
are never tuned afterwards. A ``--first-keyword`` run gives every topic by its first keyword
phrase alone.
The relevant sets come from the sites' own human-made structure (see ``relevant.py``), never
from a text scorer:

- Java 17 API docs: a group of packages (or whole modules); relevant = every class,
  interface, enum, exception and annotation page of those packages, their package-summary
  pages, the module-summary pages of whole modules, and their ``doc-files`` pages. The
  generated cross-reference pages (``class-use/``, ``package-tree.html``,
  ``package-use.html``) are not in it.
- Python 3.11 docs: a documentation chapter: the chapter page and every page its table of
  contents (Sphinx ``toctree``) lists, followed recursively.
- Django 3.2 docs (issue #18): a documentation chapter as for Python (Sphinx ``toctree``).
- Git docs: a command category of ``git.html`` (its ``GIT COMMANDS`` lists, or a whole
  section such as ``Guides``): the command and guide pages the category lists.
- SQLite docs: a section of ``docs.html`` (its collapsible lists) or the list of SQL
  statements on ``lang.html``: the pages it lists.
- Apache httpd 2.4 manual: a section of one language's ``sitemap.html``, that language's
  pages (a page without a translation is the English text under the language's directory);
  the crawl starts from that language's ``index.html``.
- Debian Administrator's Handbook: a chapter of one language's table of contents
  (``index.html``): the chapter page and the section pages listed under it; the crawl starts
  from that language's ``index.html``.
- The demo web: the ground truth of ``topicrawl.demoweb`` (a page's ``true_topic``), in one
  language: a topic's English keywords are judged on its English pages, its Chinese keywords
  on its Chinese pages.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "DEBIAN_TOPICS",
    "DEMO_LANGS",
    "DEMO_TOPIC_IDS",
    "DJANGO_TOPICS",
    "GIT_TOPICS",
    "HTTPD_TOPICS",
    "JAVA_TOPICS",
    "PYTHON_TOPICS",
    "SQLITE_TOPICS",
    "SiteTopic",
]


@dataclass(frozen=True, slots=True)
class SiteTopic:
    """One topic on a real site.

    ``keywords`` is the crawl's topic string (comma-separated phrases); ``scope`` names the
    site structure that defines the relevant set: Java package paths (``java.base/java/time``)
    or module directories (``java.sql``), or Python chapter pages (``library/archiving.html``),
    and so on for each site (see the module doc). ``seed``: the page the topic's crawls start
    from, a path under the site root (empty: the site's own seed).
    """

    id: str
    keywords: str
    scope: tuple[str, ...]
    seed: str = ""


JAVA_TOPICS: tuple[SiteTopic, ...] = (
    SiteTopic(
        "java-concurrency",
        "concurrency, thread, lock, atomic, executor, synchronization",
        ("java.base/java/util/concurrent",),  # with its atomic and locks subpackages
    ),
    SiteTopic(
        "java-time",
        "date, time, time zone, calendar, duration, instant",
        ("java.base/java/time",),  # chrono, format, temporal, zone
    ),
    SiteTopic(
        "java-files",
        "file, path, directory, file system, file attribute, symbolic link",
        ("java.base/java/nio/file",),  # attribute, spi
    ),
    SiteTopic(
        "java-network",
        "network, socket, URL, HTTP, internet address, protocol",
        ("java.base/java/net", "java.net.http"),  # java.net.spi and the HTTP client module
    ),
    SiteTopic(
        "java-sql",
        "database, SQL, JDBC, connection, statement, result set, row set",
        ("java.sql", "java.sql.rowset"),
    ),
    SiteTopic(
        "java-xml",
        "XML, DOM, SAX, XSLT, parser, namespace, schema",
        ("java.xml",),
    ),
)

PYTHON_TOPICS: tuple[SiteTopic, ...] = (
    SiteTopic(
        "python-c-api",
        "C API, PyObject, reference count, extension module, embedding, interpreter",
        ("c-api/index.html",),
    ),
    SiteTopic(
        "python-internet",
        "HTTP, URL, FTP, SMTP, IMAP, internet protocol, web server, client",
        ("library/internet.html",),
    ),
    SiteTopic(
        "python-markup",
        "XML, HTML, markup, DOM, SAX, element tree, parser",
        ("library/markup.html",),
    ),
    SiteTopic(
        "python-concurrency",
        "concurrency, thread, process, parallel, lock, pool, subprocess",
        ("library/concurrency.html",),
    ),
    SiteTopic(
        "python-files",
        "file, directory, path, filename, temporary file, copy",
        ("library/filesys.html",),
    ),
    SiteTopic(
        "python-archiving",
        "compression, archive, zip, gzip, tar, bzip2, lzma",
        ("library/archiving.html",),
    ),
    SiteTopic(
        "python-numeric",
        "math, number, decimal, fraction, random, statistics",
        ("library/numeric.html",),
    ),
    SiteTopic(
        "python-ipc",
        "socket, network, asynchronous, event loop, signal, SSL, select",
        ("library/ipc.html",),
    ),
)

DJANGO_TOPICS: tuple[SiteTopic, ...] = (
    SiteTopic(
        "django-db",
        "model, database, query, queryset, field, relationship, transaction",
        ("topics/db/index.html", "ref/models/index.html"),  # the guide and the reference
    ),
    SiteTopic(
        "django-forms",
        "form, form field, validation, widget, formset, model form",
        ("topics/forms/index.html", "ref/forms/index.html"),
    ),
    SiteTopic(
        "django-testing",
        "testing, test case, test client, test runner, assertion, fixture",
        ("topics/testing/index.html",),
    ),
)

GIT_TOPICS: tuple[SiteTopic, ...] = (
    SiteTopic(
        "git-others",
        "Subversion, CVS, Perforce, import, export, email, patch",
        ("_interacting_with_others",),
    ),
    SiteTopic(
        "git-syncing",
        "server, protocol, pack, transfer, push, fetch, remote repository",
        ("_syncing_repositories",),
    ),
    SiteTopic(
        "git-guides",
        "tutorial, guide, workflow, introduction, concepts, how to",
        ("_guides",),
    ),
)

SQLITE_TOPICS: tuple[SiteTopic, ...] = (
    SiteTopic(
        "sqlite-sql",
        "SQL, syntax, statement, SELECT, INSERT, CREATE TABLE, expression",
        ("lang.html",),  # the SQL statements and clauses lang.html lists
    ),
    SiteTopic(
        "sqlite-extensions",
        "extension, full-text search, JSON, R-tree, virtual table, loadable extension",
        ("Extensions",),  # a list of docs.html
    ),
    SiteTopic(
        "sqlite-internals",
        "file format, locking, atomic commit, journal, query planner, virtual machine, "
        "architecture",
        ("Technical and Design Documentation",),
    ),
)

HTTPD_TOPICS: tuple[SiteTopic, ...] = (
    SiteTopic(
        "httpd-zh-vhosts",
        "虚拟主机, 基于名称的虚拟主机, 基于IP, 主机名, 域名, 配置",
        ("zh-cn", "vhosts"),  # language, section id of its sitemap.html
        seed="zh-cn/index.html",
    ),
    SiteTopic(
        "httpd-zh-rewrite",
        "URL 改写, 重写规则, 重定向, 正则表达式, mod_rewrite, 映射",
        ("zh-cn", "rewrite"),
        seed="zh-cn/index.html",
    ),
    SiteTopic(
        "httpd-en-ssl",
        "SSL, TLS, encryption, certificate, HTTPS, mod_ssl",
        ("en", "ssl"),
        seed="en/index.html",
    ),
)

DEBIAN_TOPICS: tuple[SiteTopic, ...] = (
    SiteTopic(
        "debian-zh-apt",
        "软件包, APT, 软件源, 更新, 升级, 安装软件",
        ("zh-CN", "apt.html"),  # language, chapter page of its index.html
        seed="zh-CN/index.html",
    ),
    SiteTopic(
        "debian-zh-network-services",
        "网络服务, 邮件服务器, Web 服务器, 文件共享, 代理服务器, 目录服务",
        ("zh-CN", "network-services.html"),
        seed="zh-CN/index.html",
    ),
    SiteTopic(
        "debian-zh-security",
        "安全, 防火墙, 安全策略, 入侵检测, 监控, 权限",
        ("zh-CN", "security.html"),
        seed="zh-CN/index.html",
    ),
)

DEMO_TOPIC_IDS: tuple[str, ...] = ("astronomy", "cooking", "football")
"""The first three topics of ``topicrawl.demoweb.TOPICS``; keywords are the topic's name and
its first six nouns (``Topic.keywords``), in one language at a time."""

DEMO_LANGS: tuple[str, ...] = ("en", "zh")
