"""Debian packages: versions ordered as dpkg orders them, .deb files read in every compression,
the cache and apt's answers (simweb.corpora.debian)."""
from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import make_deb
from simweb.corpora import CorpusError
from simweb.corpora.debian import Package, compare_debian_versions, deb_control, fetch_deb, parse_apt_candidate

ROOT = "usr/share/doc/postgresql-doc-15/html/"


# --------------------------------------------------------------------------- versions


@pytest.mark.parametrize("a, b, order", [
    ("1.0", "1.0", 0), ("1.0", "1.0.1", -1), ("1.0~rc1", "1.0", -1), ("1:0.1", "2.0", 1),
    ("3:3.2.25-0+deb12u3", "3:3.2.25-0+deb12u7", -1), ("1.0-1", "1.0-10", -1), ("1.0a", "1.0+", -1),
    ("15.20-0+deb12u1", "15.18-0+deb12u1", 1), ("1.01", "1.1", 0), ("2.0", "10.0", -1),
])
def test_debian_version_order(a, b, order):
    assert compare_debian_versions(a, b) == order
    assert compare_debian_versions(b, a) == -order


VERSION = st.builds(
    lambda e, u, r: f"{e}{u}{r}",
    st.sampled_from(["", "1:", "2:"]),
    st.from_regex(r"[0-9][0-9a-z.+~]{0,6}", fullmatch=True),
    st.sampled_from(["", "-1", "-0+deb12u1", "-1~bpo1", "-10"]),
)


@pytest.mark.skipif(shutil.which("dpkg") is None, reason="dpkg is the reference and is not installed")
@settings(max_examples=150, deadline=None)
@given(VERSION, VERSION)
def test_debian_version_order_equals_dpkg(a, b):
    ours = compare_debian_versions(a, b)
    for op, holds in (("lt", ours < 0), ("eq", ours == 0), ("gt", ours > 0)):
        assert (subprocess.run(["dpkg", "--compare-versions", a, op, b]).returncode == 0) == holds, (a, op, b)


# --------------------------------------------------------------------------- reading packages


@pytest.mark.parametrize("compression", ["xz", "gz", "bz2", ""])
def test_a_package_is_listed_and_read_by_name_in_every_compression(tmp_path, compression):
    files = {ROOT + "b.html": b"<title>B</title>", ROOT + "a.html": b"<title>A</title>" * 500,
             ROOT + "_static/jquery.js": None, "usr/share/doc/postgresql-doc-15/copyright": b"c"}
    deb = make_deb(tmp_path, "postgresql-doc-15", "15.20-0+deb12u1", files, compression=compression)
    assert deb_control(str(deb))["Version"] == "15.20-0+deb12u1"
    with Package(str(deb)) as package:
        listed = dict(package.files(ROOT))
        assert sorted(listed) == ["_static/jquery.js", "a.html", "b.html"]  # archive order, folder dropped
        # Read in any order, as often as wanted; a symbolic link has no bytes.
        assert package.read(listed["b.html"]) == b"<title>B</title>"
        assert package.read(listed["a.html"]) == b"<title>A</title>" * 500
        assert package.read(listed["b.html"]) == b"<title>B</title>"
        assert package.read(listed["_static/jquery.js"]) is None
        assert len(package.files()) == 4


def test_a_truncated_package_gets_a_clear_error(tmp_path):
    deb = make_deb(tmp_path, "postgresql-doc-15", "15.20-0+deb12u1", {ROOT + "a.html": b"x" * 5000})
    deb.write_bytes(deb.read_bytes()[:-200])
    with pytest.raises(CorpusError, match="truncated.*delete it from the cache"):
        Package(str(deb)).__enter__()


def test_a_package_without_a_data_archive_gets_a_clear_error(tmp_path):
    (tmp_path / "x.deb").write_bytes(b"!<arch>\n" + b"debian-binary   0           0     0     100644  4         `\n2.0\n")
    with pytest.raises(CorpusError, match="no data.tar member: expected a Debian binary package"):
        Package(str(tmp_path / "x.deb")).__enter__()


# --------------------------------------------------------------------------- the cache and apt


def test_apt_policy_candidate_is_parsed():
    policy = (
        "python-django-doc:\n  Installed: (none)\n  Candidate: 3:3.2.25-0+deb12u7\n  Version table:\n"
        "     3:3.2.25-0+deb12u7 500\n        500 http://deb.debian.org/debian-security bookworm-security/main\n"
    )
    assert parse_apt_candidate(policy) == "3:3.2.25-0+deb12u7"
    assert parse_apt_candidate("x:\n  Installed: (none)\n  Candidate: (none)\n") is None
    assert parse_apt_candidate("") is None  # apt-cache policy prints nothing for an unknown package


def test_a_cached_package_is_reused_with_its_exact_version(tmp_path):
    make_deb(tmp_path, "python-django-doc", "3:3.2.25-0+deb12u7", {"usr/share/doc/x.html": b"<title>x</title>"})
    deb = fetch_deb("python-django-doc", str(tmp_path))
    assert (deb.version, deb.architecture, deb.downloaded) == ("3:3.2.25-0+deb12u7", "all", False)
    assert deb.sha256 == hashlib.sha256(Path(deb.path).read_bytes()).hexdigest()


def test_the_newest_of_several_cached_versions_is_used(tmp_path):
    make_deb(tmp_path, "postgresql-doc-15", "15.9-0+deb12u1", {ROOT + "index.html": b"<title>x</title>"})
    make_deb(tmp_path, "postgresql-doc-15", "15.10-0+deb12u1", {ROOT + "index.html": b"<title>x</title>"})
    assert fetch_deb("postgresql-doc-15", str(tmp_path)).version == "15.10-0+deb12u1"


def test_a_cached_file_holding_another_package_is_refused(tmp_path):
    path = make_deb(tmp_path, "sphinx-doc", "5.3.0-4", {"usr/share/doc/x.html": b"x"})
    path.rename(tmp_path / "python3.11-doc_3.11.2-6_all.deb")
    with pytest.raises(CorpusError, match="holds package 'sphinx-doc', expected 'python3.11-doc'; remove it"):
        fetch_deb("python3.11-doc", str(tmp_path))


def test_without_apt_and_without_a_cached_package_the_error_names_both(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    with pytest.raises(CorpusError, match=r"apt-get not found.*python3\.11-doc"):
        fetch_deb("python3.11-doc", str(tmp_path / "cache"))


def test_a_damaged_cached_package_gets_a_clear_error(tmp_path):
    (tmp_path / "python3.11-doc_3.11.2-6_all.deb").write_bytes(b"<html>an error page, not a package</html>")
    with pytest.raises(CorpusError, match="not a Debian package.*delete it"):
        fetch_deb("python3.11-doc", str(tmp_path))


def test_a_package_apt_does_not_know_gets_a_clear_error(tmp_path):
    if shutil.which("apt-cache") is None:
        pytest.skip("apt-cache is not installed: the unknown-package path needs apt")
    package = "simweb-no-such-package-exists"
    # Without refreshing the system's package lists, the message names the command to run.
    with pytest.raises(CorpusError, match=rf"apt knows no version of {package}.*apt-get update"):
        fetch_deb(package, str(tmp_path), update_lists=False)
