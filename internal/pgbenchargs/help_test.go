package pgbenchargs

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/txload/txload/workload/pgbench/script"
)

// meaning is what one option of pgbench --help must do once parsed.
type meaning struct {
	short string // "-c", or "" for a long-only option
	long  string // "--client"
	args  string // a command line using it
	check func(o *Options) bool
	// since and until bound the pgbench versions where the option means
	// this (0 = no bound).
	since, until int
}

var meanings = []meaning{
	{"-i", "--initialize", "-i", func(o *Options) bool { return o.Mode == Init && o.InitSteps == "dtgvp" }, 0, 0},
	{"-I", "--init-steps", "-i -I dtGvpf", func(o *Options) bool { return o.InitSteps == "dtGvpf" }, 0, 0},
	{"-F", "--fillfactor", "-i -F 80", func(o *Options) bool { return o.Fillfactor == 80 }, 0, 0},
	{"-n", "--no-vacuum", "-i -n", func(o *Options) bool { return o.NoVacuum && o.InitSteps == "dtg p" }, 0, 0},
	{"-q", "--quiet", "-i -q", func(o *Options) bool { return o.Quiet }, 0, 0},
	{"-s", "--scale", "-i -s 7", func(o *Options) bool { return o.Scale == 7 && o.ScaleGiven }, 0, 0},
	{"", "--foreign-keys", "-i --foreign-keys", func(o *Options) bool { return o.ForeignKeys && o.InitSteps == "dtgvpf" }, 0, 0},
	{"", "--index-tablespace", "-i --index-tablespace=fast", func(o *Options) bool { return o.IndexTablespace == "fast" }, 0, 0},
	{"", "--partition-method", "-i --partitions 4 --partition-method=HASH", func(o *Options) bool { return o.PartitionMethod == "hash" }, 0, 0},
	{"", "--partitions", "-i --partitions 4", func(o *Options) bool { return o.Partitions == 4 && o.PartitionMethod == "range" }, 0, 0},
	{"", "--tablespace", "-i --tablespace=big", func(o *Options) bool { return o.Tablespace == "big" }, 0, 0},
	{"", "--unlogged-tables", "-i --unlogged-tables", func(o *Options) bool { return o.UnloggedTables }, 0, 0},
	{"-b", "--builtin", "-b simple@3 -b sel", func(o *Options) bool {
		return len(o.Scripts) == 2 && o.Scripts[0].Builtin == "simple-update" && o.Scripts[0].Weight == 3 &&
			o.Scripts[1].Builtin == "select-only" && o.Scripts[1].Parsed.Weight == 1 && o.BuiltinUsed
	}, 0, 0},
	{"-f", "--file", "-f -@5", func(o *Options) bool {
		return len(o.Scripts) == 1 && o.Scripts[0].File == "-" && o.Scripts[0].Weight == 5 && len(o.Scripts[0].Parsed.Commands) == 1 && !o.BuiltinUsed
	}, 0, 0},
	{"-N", "--skip-some-updates", "-N", func(o *Options) bool { return len(o.Scripts) == 1 && o.Scripts[0].Builtin == "simple-update" }, 0, 0},
	{"-S", "--select-only", "-S", func(o *Options) bool { return len(o.Scripts) == 1 && o.Scripts[0].Builtin == "select-only" }, 0, 0},
	{"-c", "--client", "-c 8", func(o *Options) bool { return o.Clients == 8 && o.Threads == 1 }, 0, 0},
	{"-C", "--connect", "-C", func(o *Options) bool { return o.Connect }, 0, 0},
	{"-D", "--define", "-D x=1 -D y=a=b -D x=2", func(o *Options) bool {
		return len(o.Defines) == 2 && o.Defines[0] == Define{"x", "2"} && o.Defines[1] == Define{"y", "a=b"}
	}, 0, 0},
	{"-j", "--jobs", "-c 8 -j 4", func(o *Options) bool { return o.Jobs == 4 && o.Threads == 4 }, 0, 0},
	{"-l", "--log", "-l", func(o *Options) bool { return o.Log && o.LogPrefix == "pgbench_log" }, 0, 0},
	{"-L", "--latency-limit", "-L 2.5", func(o *Options) bool { return o.LatencyLimitUS == 2500 }, 0, 0},
	{"-M", "--protocol", "-M prepared", func(o *Options) bool { return o.Protocol == script.Prepared }, 0, 0},
	{"-P", "--progress", "-P 5", func(o *Options) bool { return o.Progress == 5 }, 0, 0},
	{"-r", "--report-per-command", "-r", func(o *Options) bool { return o.PerCommand }, 0, 0},
	{"-R", "--rate", "-R 2500", func(o *Options) bool { return o.Rate == 2500 }, 0, 0},
	{"-t", "--transactions", "-t 100", func(o *Options) bool { return o.Transactions == 100 && o.Duration == 0 }, 0, 0},
	{"-T", "--time", "-T 60", func(o *Options) bool { return o.Duration == 60 && o.Transactions == 0 }, 0, 0},
	{"-v", "--vacuum-all", "-v", func(o *Options) bool { return o.VacuumAll }, 0, 0},
	{"", "--aggregate-interval", "-l -T 10 --aggregate-interval 5", func(o *Options) bool { return o.AggregateInterval == 5 }, 0, 0},
	{"", "--exit-on-abort", "--exit-on-abort", func(o *Options) bool { return o.ExitOnAbort }, 17, 0},
	{"", "--failures-detailed", "--failures-detailed", func(o *Options) bool { return o.FailuresDetailed }, 0, 0},
	{"", "--log-prefix", "-l --log-prefix=x/run", func(o *Options) bool { return o.LogPrefix == "x/run" }, 0, 0},
	{"", "--max-tries", "-T 5 --max-tries 0", func(o *Options) bool { return o.MaxTries == 0 }, 0, 0},
	{"", "--progress-timestamp", "-P 1 --progress-timestamp", func(o *Options) bool { return o.ProgressTimestamp }, 0, 0},
	{"", "--random-seed", "--random-seed 42", func(o *Options) bool { return o.RandomSeed == 42 && o.RandomSeedGiven }, 0, 0},
	{"", "--sampling-rate", "-l --sampling-rate 0.01", func(o *Options) bool { return o.SamplingRate == 0.01 }, 0, 0},
	{"", "--show-script", "--show-script select-only", func(o *Options) bool {
		return o.Mode == ShowScript && strings.HasPrefix(o.Output, "-- select-only: <builtin: select only>\n\\set aid")
	}, 0, 0},
	{"", "--verbose-errors", "--verbose-errors", func(o *Options) bool { return o.VerboseErrors }, 0, 0},
	{"-d", "--debug", "-d", func(o *Options) bool { return o.Debug }, 0, 16},
	{"", "--debug", "--debug", func(o *Options) bool { return o.Debug }, 17, 0},
	{"-d", "--dbname", "-d bench", func(o *Options) bool { return o.DBName == "bench" && !o.Debug }, 17, 0},
	{"-h", "--host", "-h /tmp", func(o *Options) bool { return o.Host == "/tmp" }, 0, 0},
	{"-p", "--port", "-p 5433", func(o *Options) bool { return o.Port == "5433" }, 0, 0},
	{"-U", "--username", "-U alice", func(o *Options) bool { return o.User == "alice" }, 0, 0},
	{"-V", "--version", "-V", func(o *Options) bool { return o.Mode == Version }, 0, 0},
	{"-?", "--help", "-?", func(o *Options) bool { return o.Mode == Help }, 0, 0},
}

func (m meaning) applies(major int) bool {
	return (m.since == 0 || major >= m.since) && (m.until == 0 || major <= m.until)
}

// helpOption matches an option line of pgbench --help: "  -c, --client=NUM"
// or "  --foreign-keys".
var helpOption = regexp.MustCompile(`^  (?:(-.), )?(--[a-z-]+)`)

// Every option the installed pgbench lists in --help is accepted with the
// same meaning: a new option, or one whose letter changed, fails here until
// it is handled.
func TestEveryHelpOption(t *testing.T) {
	path, major := pgbench(t)
	out, err := exec.Command(path, "--help").Output()
	if err != nil {
		t.Fatalf("pgbench --help: %v", err)
	}
	listed := 0
	for _, line := range strings.Split(string(out), "\n") {
		m := helpOption.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		listed++
		short, long := m[1], m[2]
		var found *meaning
		for i := range meanings {
			if meanings[i].long == long && meanings[i].applies(major) {
				found = &meanings[i]
			}
		}
		if found == nil {
			t.Errorf("pgbench %d lists %s %s: txload pgbench does not handle it", major, short, long)
			continue
		}
		if found.short != short {
			t.Errorf("pgbench %d lists %q for %s, txload pgbench has %q", major, short, long, found.short)
		}
		for _, spelled := range []string{short, long} {
			if spelled == "" {
				continue
			}
			// The same command line with the option spelled this way.
			args := splitArgs(t, found.args)
			for i, a := range args {
				if a == found.short && found.short != "" || a == found.long || strings.HasPrefix(a, found.long+"=") {
					args[i] = spelled + strings.TrimPrefix(strings.TrimPrefix(a, found.long), found.short)
				}
			}
			o, err := Parse(args, Config{Major: major, Stdin: strings.NewReader("SELECT 1;\n")})
			if err != nil {
				t.Errorf("%s (%q): refused: %v", spelled, args, err)
				continue
			}
			if !found.check(o) {
				t.Errorf("%s (%q): parsed to %+v", spelled, args, *o)
			}
		}
	}
	if listed < 40 {
		t.Fatalf("read only %d options in pgbench --help: the format changed?", listed)
	}
}

// Usage is pgbench's own --help, option for option, for the version the
// command line follows.
func TestUsageIsPgbenchHelp(t *testing.T) {
	path, major := pgbench(t)
	out, err := exec.Command(path, "--help").Output()
	if err != nil {
		t.Fatalf("pgbench --help: %v", err)
	}
	want, tail, _ := strings.Cut(string(out), "\nReport bugs to")
	usage := Usage("pgbench", major, "the installed one", "more\n")
	got, _, _ := strings.Cut(usage, "\nThis command line follows")
	if got != want {
		t.Errorf("Usage(%d) differs from pgbench --help:\n--- pgbench\n%s\n--- Usage\n%s", major, want, got)
	}
	// It ends as pgbench's does, in its layout, but sends bugs to txload's
	// tracker, not to PostgreSQL's list.
	_ = tail
	wantEnd := "\nmore\n\nReport bugs to <https://github.com/txload/txload/issues>.\ntxload home page: <https://github.com/txload/txload>\n"
	if !strings.HasSuffix(usage, wantEnd) {
		t.Errorf("Usage does not end with txload's tracker in pgbench's layout:\n%s", usage)
	}
	if strings.Contains(usage, "pgsql-bugs") {
		t.Errorf("Usage sends txload's bugs to PostgreSQL's list:\n%s", usage)
	}
}

// The meanings hold for every version txload follows, not only the
// installed one.
func TestMeaningsEveryVersion(t *testing.T) {
	for major := MinMajor; major <= MaxMajor; major++ {
		for _, m := range meanings {
			if !m.applies(major) {
				continue
			}
			o, err := Parse(splitArgs(t, m.args), Config{Major: major, Stdin: strings.NewReader("SELECT 1;\n")})
			if err != nil {
				t.Errorf("pgbench %d, %s: refused: %v", major, m.args, err)
				continue
			}
			if !m.check(o) {
				t.Errorf("pgbench %d, %s: parsed to %+v", major, m.args, *o)
			}
		}
	}
}
