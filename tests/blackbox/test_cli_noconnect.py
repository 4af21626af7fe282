"""gpuaggctl when nothing answers: exit 3 and the documented message; plus the
usage paths that never touch a socket (exit 2, --version, help).

Runs build/bin/gpuaggctl (build it first: make build/bin/gpuaggctl)."""
import os
import socket
import subprocess
import tempfile

import pytest

ROOT = os.environ.get("GA_ROOT") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CTL = os.environ.get("GA_CTL") or os.path.join(ROOT, "build", "bin", "gpuaggctl")   # GA_CTL: e.g. an ASan build


def run(*args, env_socket=None):
    env = {k: v for k, v in os.environ.items() if k != "GPUAGG_SOCKET"}
    if env_socket is not None:
        env["GPUAGG_SOCKET"] = env_socket
    p = subprocess.run([CTL, *args], capture_output=True, text=True, env=env, timeout=30)
    return p.returncode, p.stdout, p.stderr


def expect_noconnect(args, path, reason, env_socket=None):
    rc, out, err = run(*args, env_socket=env_socket)
    want = f"gpuaggctl: cannot connect to gpuaggd at {path}: {reason} (is the daemon running?)\n"
    assert rc == 3 and err == want and out == "", f"rc={rc} out={out!r} err={err!r} want {want!r}"


class Paths:
    missing = dead = plain = None


P = Paths()


@pytest.fixture(scope="module", autouse=True)
def paths():
    """A directory with no socket at P.missing, a socket file nobody listens
    on at P.dead (bound, then closed) and a plain file at P.plain."""
    assert os.access(CTL, os.X_OK), f"{CTL} not built"
    with tempfile.TemporaryDirectory(prefix="ga-cli-") as d:
        P.missing = os.path.join(d, "nope.sock")
        P.dead = os.path.join(d, "dead.sock")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(P.dead)
        s.close()
        P.plain = os.path.join(d, "plain")
        open(P.plain, "w").close()
        yield


@pytest.mark.parametrize("cmd", ["ping", "status", "stats", "config", "reload", "shutdown"])
def test_missing_socket(cmd):
    expect_noconnect(["--socket", P.missing, cmd], P.missing, "No such file or directory")


# resample without --local and the job commands are daemon clients
@pytest.mark.parametrize("args", [["resample", "--granularity", "60", "--method", "mean"],
                                  ["job", "list"], ["job", "status", "7"]], ids=" ".join)
def test_missing_socket_daemon_clients(args):
    expect_noconnect(["--socket", P.missing, *args], P.missing, "No such file or directory")


def test_dead_socket():
    expect_noconnect(["ping", "--socket", P.dead], P.dead, "Connection refused")


def test_dead_socket_socket_equals():
    expect_noconnect([f"--socket={P.dead}", "status"], P.dead, "Connection refused")


def test_plain_file():
    # a plain file is not a socket
    expect_noconnect(["--socket", P.plain, "ping"], P.plain, "Connection refused")


def test_path_too_long():
    # a path longer than sun_path
    long_path = "/tmp/" + "x" * 200 + ".sock"
    expect_noconnect(["--socket", long_path, "ping"], long_path, "File name too long")


# GPUAGG_SOCKET is the default; --socket wins over it
def test_env_socket():
    expect_noconnect(["ping"], P.missing, "No such file or directory", env_socket=P.missing)


def test_socket_over_env():
    expect_noconnect(["--socket", P.dead, "ping"], P.dead, "Connection refused",
                     env_socket=P.missing)


def test_empty_env_means_default():
    default = "/run/gpuagg/control.sock"
    if os.path.exists(default):
        pytest.skip(f"{default} exists: a real daemon there would answer")
    expect_noconnect(["ping"], default, "No such file or directory", env_socket="")


def test_options_after_command():
    # --json and --timeout after the command are still options
    expect_noconnect(["status", "--json", "--timeout", "0.5", "--socket", P.missing],
                     P.missing, "No such file or directory")


# usage errors: exit 2, nothing on stdout, a message naming the problem
USAGE_ERRORS = [   # (name, arguments, what the message says)
    ("no command", [], "no command given"),
    ("unknown command", ["frob"], "unknown command 'frob'"),
    ("unknown option", ["--frob", "ping"], "unknown option '--frob'"),
    ("extra argument", ["ping", "now"], "unexpected argument 'now'"),
    ("--socket without value", ["ping", "--socket"], "--socket needs a value"),
    ("empty --socket", ["--socket=", "ping"], "--socket needs a non-empty path"),
    ("bad timeout", ["--timeout", "soon", "ping"], "--timeout: 'soon' is not a number"),
    ("zero timeout", ["--timeout=0", "ping"], "--timeout: '0' is not a number"),
    ("negative timeout", ["--timeout", "-1", "ping"], "--timeout: '-1' is not a number"),
    ("resample without --method", ["resample", "--granularity", "60"], "--method is required"),
    ("job without subcommand", ["job"], "no subcommand"),
    ("job status without id", ["job", "status"], "the job ID is missing"),
]


@pytest.mark.parametrize("args,needle", [pytest.param(a, n, id=name) for name, a, n in USAGE_ERRORS])
def test_usage_error(args, needle):
    rc, out, err = run(*args)
    assert rc == 2 and out == "" and needle in err, f"rc={rc} out={out!r} err={err!r}"


def test_version():
    rc, out, err = run("--version")
    version = open(os.path.join(ROOT, "VERSION")).read().strip()
    assert rc == 0 and out == f"gpuaggctl {version} (control protocol 1)\n", f"rc={rc} out={out!r}"


@pytest.mark.parametrize("arg", ["help", "--help", "-h"])
def test_help(arg):
    rc, out, err = run(arg)
    assert rc == 0 and out.startswith("usage: gpuaggctl") and "exit status" in out \
        and all(c in out for c in ("ping", "status", "stats", "config", "reload", "shutdown",
                                   "resample")), f"rc={rc} out={out[:80]!r}"
