#!/usr/bin/env python3
"""Every txload command × the stop signals, and what each leaves behind.

Runs each command for real (the embedded server where it starts one, else
a throwaway PostgreSQL of the system's binaries: bench/pgserver.py), waits
until it is under way (its progress line, or a moment for commands that
print none), sends SIGINT, SIGTERM, SIGHUP, SIGINT twice (1.1 s apart:
beyond the second in which txload takes a repeated signal for the same
stop) or SIGKILL, and records the exit code, the seconds from the first
signal to the exit, the files left (in the run's own $TMPDIR and beside
its outputs) and the processes left a second after the exit (any whose
command line or working directory is in those directories, or whose
environment carries the run's marker). It prints the table of docs/failures.md ("Signals and
what is left behind") on stdout, and each run's figures on stderr.

  bench/signals/signals.py [--only SUBSTRING] [--port 25470] >table.md 2>runs.log
  bench/signals/signals.py --table runs.log   # the table again, from the log

Set TXLOAD to a built binary to skip building one. Takes about 10 minutes
on 2 busy cores. Run as root, the servers run as nobody (pgserver.py).
"""
import argparse, json, os, re, shutil, signal, subprocess, sys, tempfile, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from pgserver import Server, ROOT  # noqa: E402

SIGNALS = [
    ("SIGINT", [signal.SIGINT]),
    ("SIGTERM", [signal.SIGTERM]),
    ("SIGHUP", [signal.SIGHUP]),
    ("SIGINT ×2", [signal.SIGINT, signal.SIGINT]),
    ("SIGKILL", [signal.SIGKILL]),
]


def commands(url, big):
    """name, arguments, what says the command is under way (a regular
    expression on its stderr, or seconds), what to prepare in the run's
    directory (fifo: a FIFO IN no one writes)."""
    return [
        ("run bank (embedded)", ["run", "bank", "--accounts", "10000", "-d", "60s", "--isolation", "rc",
                                 "--json", "{DIR}/run.json"], r"ops/s", None),
        ("run bank --url", ["run", "bank", "--url", url, "--accounts", "10000", "-d", "60s", "--isolation", "rc",
                            "--json", "{DIR}/run.json", "--html", "{DIR}/run.html"], r"ops/s", None),
        ("run append --history", ["run", "append", "--url", url, "-c", "4", "-d", "60s",
                                  "--history", "{DIR}/h.jsonl"], r"ops/s", None),
        ("init tpcb", ["init", "tpcb", "--url", url, "--scale", "30", "--drop"], r"tuples", None),
        ("check bank", ["check", "bank", "--url", url], 0.2, "bank"),
        ("sweep select-only", ["sweep", "select-only", "--url", url, "--slo", "p99<=2s", "--step-duration", "20s",
                               "--step-warmup", "1s", "--progress", "1s", "--html", "{DIR}/sweep.html"],
         r"\d\.\ds +[\d.]+ ops/s", "tpcb"),
        ("lag (embedded pair)", ["lag", "--workload", "bank", "--accounts", "10000", "-d", "60s"], r"lag\s+p50", None),
        ("failover (embedded pair)", ["failover", "bank", "--accounts", "10000", "-d", "60s", "--at", "50s"], r"ops/s", None),
        ("pgbench", ["pgbench", "-c", "4", "-T", "60", "-P", "1", url], r"progress:", "tpcb"),
        ("check history (15 MB)", ["check", "history", big], 0.5, None),
        ("check history (FIFO, no writer)", ["check", "history", "{DIR}/IN"], 0.5, "fifo"),
        ("report (FIFO, no writer)", ["report", "{DIR}/IN", "-o", "{DIR}/out.html"], 0.5, "fifo"),
        ("merge (FIFO, no writer)", ["merge", "{DIR}/IN", "--output", "html", "-o", "{DIR}/out.html"], 0.5, "fifo"),
    ]


def shared_dir(prefix):
    """A directory the servers' user (nobody, when root) can reach."""
    d = tempfile.mkdtemp(prefix=prefix)
    os.chmod(d, 0o755)
    return d


def processes(dirs, marker):
    """The processes whose command line or working directory is in one of
    dirs, or whose environment carries marker: pid and name."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(f"/proc/{pid}/cwd")
            environ = open(f"/proc/{pid}/environ", "rb").read().decode(errors="replace")
        except OSError:
            continue
        if any(d in cmd or cwd.startswith(d) for d in dirs) or marker in environ:
            out.append((int(pid), cmd.split(" ")[0].rsplit("/", 1)[-1]))
    return out


def generic(name):
    """A file's name with its random part as *."""
    return re.sub(r"[0-9]{4,}|-[0-9a-f]{8,}", "*", name)


def left(tmp, out, inputs):
    names = [generic(n) + ("/" if os.path.isdir(os.path.join(tmp, n)) else "") for n in sorted(os.listdir(tmp))]
    names += [n for n in sorted(os.listdir(out)) if n not in inputs]
    return names


def run_one(bin, cmd, sigs, workdir):
    name, args, ready, setup = cmd
    tmp, out = shared_dir(os.path.join(workdir, "tmp-")), shared_dir(os.path.join(workdir, "out-"))
    inputs = set()
    if setup == "fifo":
        os.mkfifo(os.path.join(out, "IN"))
        inputs.add("IN")
    marker = f"txload-signals-{os.getpid()}-{time.monotonic_ns()}"
    argv = [bin] + [a.replace("{DIR}", out) for a in args]
    env = dict(os.environ, TMPDIR=tmp, DATABASE_URL="", TXLOAD_SIGNALS_MARKER=marker)
    p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=out)
    # The marker is in the environment: a process txload started that is
    # in neither directory (the failover command's) still carries it.
    err = []
    seen = threading.Event()

    def read():
        for line in iter(p.stderr.readline, b""):
            line = line.decode(errors="replace")
            err.append(line)
            if isinstance(ready, str) and re.search(ready, line):
                seen.set()
    t = threading.Thread(target=read, daemon=True)
    t.start()
    if isinstance(ready, str):
        if not seen.wait(300):
            p.kill()
            raise SystemExit(f"{name}: not under way after 300 s:\n{''.join(err)}")
    else:
        time.sleep(ready)
    if p.poll() is not None:
        raise SystemExit(f"{name}: ended (exit {p.returncode}) before the signal:\n{''.join(err)}")
    first = time.monotonic()
    note = ""
    for i, s in enumerate(sigs):
        if i > 0:
            try:
                p.wait(1.1)
                note = " (ended at the first)"
                break
            except subprocess.TimeoutExpired:
                pass
        p.send_signal(s)
    try:
        p.wait(120)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        note += " (still running after 120 s: killed)"
    secs = time.monotonic() - first
    t.join(5)
    time.sleep(1)
    procs = processes([tmp, out], marker)
    files = left(tmp, out, inputs)
    code = p.returncode if p.returncode >= 0 else f"killed ({signal.Signals(-p.returncode).name})"
    # What is left is ended and removed here, not by the next run.
    for pid, _ in procs:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    for _ in range(100):
        if not processes([tmp, out], marker):
            break
        time.sleep(0.1)
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    return {"command": name, "code": code, "secs": round(secs, 2), "files": files,
            "procs": sorted({n for _, n in procs}), "count": len(procs), "note": note,
            "last": err[-1].strip() if err else ""}


def outputs(cmd):
    """The files a command was asked to write, by name."""
    return {os.path.basename(a) for a in cmd[1] if a.startswith("{DIR}/") and a != "{DIR}/IN"}


def cell(r, asked):
    """exit · seconds, the outputs written, then what was left, if
    anything."""
    out = f"{r['code']} · {r['secs']:.1f} s"
    wrote = [f"`{f}`" for f in r["files"] if f in asked]
    what = [f"`{f}`" for f in r["files"] if f not in asked]
    if r["count"]:
        what.append(f"{r['count']} processes ({', '.join(r['procs'])})")
    if wrote:
        out += " · wrote " + ", ".join(wrote)
    if what:
        out += " · left " + ", ".join(what)
    return out + r["note"]


def table(records):
    """The markdown table of records (run_one's, with their signal)."""
    asked = {c[0]: outputs(c) for c in commands("URL", "BIG")}
    rows = {}
    for r in records:
        rows.setdefault(r["command"], {})[r["signal"]] = cell(r, asked.get(r["command"], set()))
    lines = ["| command | " + " | ".join(l for l, _ in SIGNALS) + " |", "|---" * (len(SIGNALS) + 1) + "|"]
    for name, cells in rows.items():
        lines.append("| " + name + " | " + " | ".join(cells.get(l, "") for l, _ in SIGNALS) + " |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--port", type=int, default=25470)
    ap.add_argument("--table", metavar="LOG", help="only print the table of the runs LOG (this script's stderr) holds")
    a = ap.parse_args()
    if a.table:
        with open(a.table) as f:
            print(table([json.loads(l) for l in f if l.startswith("{")]))
        return
    workdir = shared_dir("/tmp/txload-signals-")
    try:
        with Server(a.port) as srv:
            bin = srv.txload()
            big = os.path.join(workdir, "big.jsonl")
            with open(big, "w") as f:
                f.write('{"client":0,"intended_ns":1,"invoke_ns":1,"complete_ns":2,"outcome":"committed","ops":[["r",1,[')
                f.write(",".join(str(i) for i in range(1, 2_000_001)))
                f.write("]]]}\n")
            prepared = set()
            records = []
            for cmd in commands(srv.url, big):
                if a.only not in cmd[0]:
                    continue
                setup = cmd[3]
                if setup in ("bank", "tpcb") and setup not in prepared:
                    extra = ["--accounts", "3000000"] if setup == "bank" else ["--scale", "10"]
                    subprocess.run([bin, "init", setup, "--url", srv.url, "--drop"] + extra, check=True,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    prepared.add(setup)
                for label, sigs in SIGNALS:
                    r = run_one(bin, cmd, sigs, workdir)
                    r["signal"] = label
                    print(json.dumps(r), file=sys.stderr, flush=True)
                    records.append(r)
            print(table(records))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
