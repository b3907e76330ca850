"""The benchmark's topics: keywords and where each topic's relevant set comes from.

The keywords were written down before any crawl was run with them and are not tuned
afterwards: they are the words a user who wants that part of the documentation would type.
The relevant sets come from the sites' own human-made structure (see ``relevant.py``), never
from a text scorer:

- Java 17 API docs: a group of packages (or whole modules); relevant = every class,
  interface, enum, exception and annotation page of those packages, their package-summary
  pages, the module-summary pages of whole modules, and their ``doc-files`` pages. The
  generated cross-reference pages (``class-use/``, ``package-tree.html``,
  ``package-use.html``) are not in it.
- Python 3.11 docs: a documentation chapter: the chapter page and every page its table of
  contents (Sphinx ``toctree``) lists, followed recursively.
- The demo web: the ground truth of ``topicrawl.demoweb`` (a page's ``true_topic``), in one
  language: a topic's English keywords are judged on its English pages, its Chinese keywords
  on its Chinese pages.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEMO_LANGS", "DEMO_TOPIC_IDS", "JAVA_TOPICS", "PYTHON_TOPICS", "SiteTopic"]


@dataclass(frozen=True, slots=True)
class SiteTopic:
    """One topic on a real site.

    ``keywords`` is the crawl's topic string (comma-separated phrases); ``scope`` names the
    site structure that defines the relevant set: Java package paths (``java.base/java/time``)
    or module directories (``java.sql``), or Python chapter pages (``library/archiving.html``).
    """

    id: str
    keywords: str
    scope: tuple[str, ...]


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

DEMO_TOPIC_IDS: tuple[str, ...] = ("astronomy", "cooking", "football")
"""The first three topics of ``topicrawl.demoweb.TOPICS``; keywords are the topic's name and
its first six nouns (``Topic.keywords``), in one language at a time."""

DEMO_LANGS: tuple[str, ...] = ("en", "zh")
