"""Debian documentation: any documentation packages with HTML pages, as one crawl.

``simweb corpus debian-docs --packages P1 P2 … --out DIR`` builds, with the stages of
``simweb.corpora.docsites``, a crawl of the packages' pages under the public URL of each
project where ``sites.KNOWN_SITES`` knows it (``https://<package>.docs.example/`` otherwise),
the links between pages resolved and rewritten to those URLs, and a topic directory from each
site's navigation where its layout is known, else from its folders (``Top/<package>/<folder>/…``).
MANIFEST.json names the exact package versions, so that numbers measured on the crawl can be
reproduced.

HTML pages in Debian 12's documentation packages (regular ``.html`` files, as
``dpkg-deb --fsys-tarfile | tar -tv`` lists them; version fetched with apt-get):

===========================  ==============================  =======  ================
package                      version                         pages    HTML
===========================  ==============================  =======  ================
postgresql-doc-15            15.20-0+deb12u1                   1,169    16 MB
python3.11-doc               3.11.2-6+deb12u9                    530    51 MB
python-django-doc            3:3.2.25-0+deb12u7                  692    29 MB
linux-doc-6.1                6.1.192-2                         3,185   128 MB
python-scipy-doc             1.10.1-2                          4,304    95 MB
libstdc++-12-doc             12.2.0-14+deb12u1                 3,906   122 MB
openjdk-17-doc               17.0.21.1+2-1~deb12u1            10,140   270 MB
rust-doc                     1.63.0+dfsg1-2                   32,101   478 MB
python-statsmodels-doc       0.13.5+dfsg-7                     6,245    97 MB
qtbase5-doc-html             5.15.8+dfsg-11+deb12u3            2,333    50 MB
libboost1.81-doc             1.81.0-5+deb12u1                  3,904    60 MB
ghc-doc                      9.0.2-4                           3,472   263 MB
python-pandas-doc            1.5.3+dfsg-2                      4,122   250 MB
cppreference-doc-en-html     20170409-2                        4,424   165 MB
wx3.2-doc                    3.2.2+dfsg-2                      3,271   169 MB
python-astropy-doc           5.2.1-2+deb12u1                   1,567    47 MB
sagemath-doc                 9.5-6                             4,988   248 MB
erlang-doc                   1:25.2.3+dfsg-1+deb12u4           1,060   184 MB
lilypond-doc-html            2.24.1-2                          1,874   177 MB
scala-doc                    2.11.12-5                         3,524   417 MB
sumo-doc                     1.15.0+dfsg-1+deb12u1             6,746   537 MB
libfastutil-java-doc         8.5.11+dfsg-1                     4,397   288 MB
rust-web-doc                 1.85.0+dfsg3-1~deb12u3           43,823   448 MB
trilinos-doc                 13.2.0-4                         28,355   707 MB
vtk9-doc                     9.1.0+really9.1.0+dfsg2-5+…      27,361  1,978 MB
===========================  ==============================  =======  ================

Together about 207,000 pages (7.3 GB of HTML); ``simweb.corpora.scale`` builds crawls of a given
size from them.
"""
from __future__ import annotations

from collections.abc import Sequence

from simweb.corpora import CorpusError
from simweb.corpora.docsites import DocsCorpus, build_corpus

__all__ = ["build_debian_docs", "debian_docs"]


def debian_docs(packages: Sequence[str]) -> DocsCorpus:
    """The crawl of ``packages`` (each named once), in the order given."""
    repeated = sorted({p for p in packages if list(packages).count(p) > 1})
    if not packages or repeated:
        raise CorpusError(
            f"expected a list of distinct Debian documentation packages, got {list(packages)!r}"
            + (f" ({', '.join(repeated)} named more than once)" if repeated else "")
            + "; find some with `apt-cache search -- -doc`"
        )
    return DocsCorpus(key="debian-docs", title="Debian documentation", packages=tuple(packages))


def build_debian_docs(packages: Sequence[str], out: str, cache: str | None = None) -> dict:
    """Build the crawl and directory of ``packages`` into ``out`` (``.deb`` files cached in ``cache``)."""
    return build_corpus(debian_docs(packages), out, cache)
