#!/usr/bin/python3
"""gpuaggctl when nothing answers: exit 3 and the documented message; plus the
usage paths that never touch a socket (exit 2, --version, help).

Runs build/bin/gpuaggctl (build it first: make build/bin/gpuaggctl).
Last line: "cli_noconnect: N passed, N failed, N skipped"."""
import os
import socket
import subprocess
import sys
import tempfile

ROOT = os.environ.get("GA_ROOT") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CTL = os.environ.get("GA_CTL") or os.path.join(ROOT, "build", "bin", "gpuaggctl")   # GA_CTL: e.g. an ASan build
passed = failed = 0


def run(*args, env_socket=None):
    env = {k: v for k, v in os.environ.items() if k != "GPUAGG_SOCKET"}
    if env_socket is not None:
        env["GPUAGG_SOCKET"] = env_socket
    p = subprocess.run([CTL, *args], capture_output=True, text=True, env=env, timeout=30)
    return p.returncode, p.stdout, p.stderr


def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"  FAIL {name}: {detail}")


def expect_noconnect(name, args, path, reason, env_socket=None):
    rc, out, err = run(*args, env_socket=env_socket)
    want = f"gpuaggctl: cannot connect to gpuaggd at {path}: {reason} (is the daemon running?)\n"
    check(name, rc == 3 and err == want and out == "", f"rc={rc} out={out!r} err={err!r} want {want!r}")


def main():
    if not os.access(CTL, os.X_OK):
        print(f"  FAIL {CTL} not built")
        print("cli_noconnect: 0 passed, 1 failed, 0 skipped")
        return 1
    with tempfile.TemporaryDirectory(prefix="ga-cli-") as d:
        missing = os.path.join(d, "nope.sock")
        for cmd in ("ping", "status", "stats", "config", "reload", "shutdown"):
            expect_noconnect(f"missing socket, {cmd}", ["--socket", missing, cmd], missing,
                             "No such file or directory")
        # resample without --local and the job commands are daemon clients
        for args in (["resample", "--granularity", "60", "--method", "mean"], ["job", "list"],
                     ["job", "status", "7"]):
            expect_noconnect(f"missing socket, {' '.join(args)}", ["--socket", missing, *args],
                             missing, "No such file or directory")

        # a socket file nobody listens on: bound, then closed
        dead = os.path.join(d, "dead.sock")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(dead)
        s.close()
        expect_noconnect("dead socket", ["ping", "--socket", dead], dead, "Connection refused")
        expect_noconnect("dead socket, --socket=", [f"--socket={dead}", "status"], dead, "Connection refused")

        # a plain file is not a socket
        plain = os.path.join(d, "plain")
        open(plain, "w").close()
        expect_noconnect("plain file", ["--socket", plain, "ping"], plain, "Connection refused")

        # a path longer than sun_path
        long_path = "/tmp/" + "x" * 200 + ".sock"
        expect_noconnect("path too long", ["--socket", long_path, "ping"], long_path, "File name too long")

        # GPUAGG_SOCKET is the default; --socket wins over it
        expect_noconnect("env socket", ["ping"], missing, "No such file or directory", env_socket=missing)
        expect_noconnect("--socket over env", ["--socket", dead, "ping"], dead, "Connection refused",
                         env_socket=missing)
        default = "/run/gpuagg/control.sock"
        if not os.path.exists(default):          # a real daemon here would answer
            expect_noconnect("empty env means default", ["ping"], default, "No such file or directory",
                             env_socket="")

        # --json and --timeout after the command are still options
        expect_noconnect("options after command", ["status", "--json", "--timeout", "0.5", "--socket", missing],
                         missing, "No such file or directory")

    # usage errors: exit 2, nothing on stdout, a message naming the problem
    for name, args, needle in [
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
    ]:
        rc, out, err = run(*args)
        check(name, rc == 2 and out == "" and needle in err, f"rc={rc} out={out!r} err={err!r}")

    rc, out, err = run("--version")
    version = open(os.path.join(ROOT, "VERSION")).read().strip()
    check("--version", rc == 0 and out == f"gpuaggctl {version} (control protocol 1)\n", f"rc={rc} out={out!r}")
    for args in (["help"], ["--help"], ["-h"]):
        rc, out, err = run(*args)
        check(f"{args[0]}", rc == 0 and out.startswith("usage: gpuaggctl") and "exit status" in out
              and all(c in out for c in ("ping", "status", "stats", "config", "reload", "shutdown", "resample")),
              f"rc={rc} out={out[:80]!r}")

    print(f"cli_noconnect: {passed} passed, {failed} failed, 0 skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
