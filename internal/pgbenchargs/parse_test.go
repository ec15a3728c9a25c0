package pgbenchargs

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/txload/txload/workload/pgbench/script"
)

func txloadFlags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("txload", pflag.ContinueOnError)
	fs.String("json", "", "")
	fs.String("histogram", "", "")
	fs.String("metrics-addr", "", "")
	fs.String("output", "text", "")
	fs.StringArray("url", nil, "")
	fs.Bool("spin", false, "")
	return fs
}

// pgbench's defaults: one client, one thread, 10 transactions each,
// tpcb-like, simple protocol, one try, no progress, no log.
func TestDefaults(t *testing.T) {
	o, err := Parse(nil, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if o.Mode != Run || o.Major != DefaultMajor || o.Clients != 1 || o.Threads != 1 || o.Transactions != 10 || o.Duration != 0 ||
		len(o.Scripts) != 1 || o.Scripts[0].Builtin != "tpcb-like" || o.Scripts[0].Parsed.Title != "<builtin: TPC-B (sort of)>" ||
		o.Protocol != script.Simple || o.MaxTries != 1 || o.Progress != 0 || o.Log || o.Scale != 1 || o.NoVacuum || o.RandomSeedGiven {
		t.Fatalf("defaults: %+v", *o)
	}
	i, err := Parse([]string{"-i"}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if i.Mode != Init || i.InitSteps != "dtgvp" || i.Scale != 1 || i.Fillfactor != 100 || i.Partitions != 0 || i.PartitionMethod != "" || len(i.Scripts) != 0 {
		t.Fatalf("init defaults: %+v", *i)
	}
}

// The commands of the seed documents 001 and 004, as printed there.
func TestSeedCommands(t *testing.T) {
	for _, tc := range []struct {
		line  string
		check func(o *Options) bool
	}{
		{"--initialize --host=h1 --username=root --port=26257 --no-vacuum --scale=10 --foreign-keys example",
			func(o *Options) bool {
				return o.Mode == Init && o.Host == "h1" && o.User == "root" && o.Port == "26257" && o.DBName == "example" &&
					o.Scale == 10 && o.InitSteps == "dtg pf"
			}},
		{"--initialize --init-steps=dtGpf --host=h1 --username=root --port=26257 --no-vacuum --scale=10 --foreign-keys example",
			func(o *Options) bool { return o.InitSteps == "dtGpf" && o.ForeignKeys }},
		{"--host=h1 --no-vacuum --file=tpcb-original.sql@1 --client=8 --jobs=8 --username=root --port=26257 -T 60 -P 5 --failures-detailed --verbose-errors --max-tries=10 --protocol=prepared example",
			func(o *Options) bool {
				return o.Mode == Run && o.NoVacuum && len(o.Scripts) == 1 && o.Scripts[0].File == "tpcb-original.sql" && o.Clients == 8 &&
					o.Threads == 8 && o.Duration == 60 && o.Transactions == 0 && o.Progress == 5 && o.FailuresDetailed && o.VerboseErrors &&
					o.MaxTries == 10 && o.Protocol == script.Prepared && o.DBName == "example"
			}},
		{"-U pgbench -i -s 1000 --partitions=10 pgbench",
			func(o *Options) bool {
				return o.Mode == Init && o.User == "pgbench" && o.Scale == 1000 && o.Partitions == 10 && o.PartitionMethod == "range" && o.DBName == "pgbench"
			}},
		{"-U pgbench -c 10 -j 4 -P 5 -T 3600 --rate=2500 pgbench",
			func(o *Options) bool {
				return o.Clients == 10 && o.Threads == 4 && o.Progress == 5 && o.Duration == 3600 && o.Rate == 2500 && o.DBName == "pgbench"
			}},
	} {
		o, err := Parse(splitArgs(t, tc.line), Config{Major: 15, ReadFile: func(string) ([]byte, error) {
			return []byte("BEGIN;\nSELECT 1;\nEND;\n"), nil
		}})
		if err != nil {
			t.Errorf("%s: %v", tc.line, err)
			continue
		}
		if !tc.check(o) {
			t.Errorf("%s: parsed to %+v", tc.line, *o)
		}
	}
}

// txload's own long flags pass through, in the form a pflag.FlagSet
// parses; pgbench's options keep their meaning even where a txload flag
// has the same name.
func TestTxloadFlagsPassThrough(t *testing.T) {
	fs := txloadFlags()
	fs.Int("rate", 0, "") // txload's --rate is not pgbench's -R
	o, err := Parse(splitArgs(t, "-c 4 --json out.json --histogram=h.hlog -T 10 --spin --output text --url postgres://x/y --rate 50 --metrics-addr :9090 db"),
		Config{Txload: fs})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--json=out.json", "--histogram=h.hlog", "--spin", "--output=text", "--url=postgres://x/y", "--metrics-addr=:9090"}
	if !reflect.DeepEqual(o.Txload, want) {
		t.Fatalf("passed through %q, want %q", o.Txload, want)
	}
	if o.Rate != 50 || o.Clients != 4 || o.Duration != 10 || o.DBName != "db" {
		t.Fatalf("pgbench's options: %+v", *o)
	}
	if err := fs.Parse(o.Txload); err != nil {
		t.Fatalf("the flag set refuses what passed through: %v", err)
	}
	if v, _ := fs.GetString("json"); v != "out.json" {
		t.Fatalf("--json = %q", v)
	}
	// Not abbreviated, and unknown names are pgbench's complaint.
	for _, line := range []string{"--js out.json", "--jsonx=1", "--json"} {
		_, err := Parse(splitArgs(t, line), Config{Txload: txloadFlags()})
		var pe *Error
		if !errors.As(err, &pe) || !strings.Contains(pe.Lines[len(pe.Lines)-1], `Try "pgbench --help"`) {
			t.Errorf("%s: %v", line, err)
		}
	}
}

// -d is --debug up to pgbench 16 and --dbname from 17; --pgbench-version
// chooses.
func TestVersionChoosesDashD(t *testing.T) {
	for _, tc := range []struct {
		args  string
		major int
		check func(o *Options) bool
	}{
		{"-d mydb", 15, func(o *Options) bool { return o.Debug && o.DBName == "mydb" }},
		{"-d mydb", 17, func(o *Options) bool { return !o.Debug && o.DBName == "mydb" }},
		{"--pgbench-version 16 -d -c 2", 18, func(o *Options) bool { return o.Major == 16 && o.Debug && o.Clients == 2 }},
		{"-d db --pgbench-version=17", 15, func(o *Options) bool { return o.Major == 17 && o.DBName == "db" && !o.Debug }},
		{"--exit-on-abort --debug", 17, func(o *Options) bool { return o.ExitOnAbort && o.Debug }},
	} {
		o, err := Parse(splitArgs(t, tc.args), Config{Major: tc.major})
		if err != nil {
			t.Errorf("%s (pgbench %d): %v", tc.args, tc.major, err)
			continue
		}
		if !tc.check(o) {
			t.Errorf("%s (pgbench %d): %+v", tc.args, tc.major, *o)
		}
	}
	// Under pgbench 18, "-d -c 2" makes "-c" the database, as pgbench 18
	// does, and "2" is one argument too many.
	_, err := Parse(splitArgs(t, "-d -c 2"), Config{Major: 18})
	if err == nil || !strings.Contains(err.Error(), `too many command-line arguments (first is "2")`) {
		t.Errorf("-d -c 2 under 18: %v", err)
	}
	// An option of a later pgbench says which version has it.
	_, err = Parse([]string{"--exit-on-abort"}, Config{Major: 15})
	if err == nil || !strings.Contains(err.Error(), "unrecognized option '--exit-on-abort'") ||
		!strings.Contains(err.Error(), "--exit-on-abort is an option of pgbench 17 and later") {
		t.Errorf("--exit-on-abort under 15: %v", err)
	}
	for _, bad := range []string{"--pgbench-version 14", "--pgbench-version=x", "--pgbench-version"} {
		if _, err := Parse(splitArgs(t, bad), Config{}); err == nil || !strings.Contains(err.Error(), "pgbench 15 to 18") && !strings.Contains(err.Error(), "15 to 18") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func TestRandomSeedFromEnvironment(t *testing.T) {
	env := func(v string) func(string) (string, bool) {
		return func(k string) (string, bool) {
			if k == "PGBENCH_RANDOM_SEED" {
				return v, true
			}
			return "", false
		}
	}
	o, err := Parse(nil, Config{LookupEnv: env("77")})
	if err != nil || o.RandomSeed != 77 || !o.RandomSeedGiven || len(o.Notices) != 1 {
		t.Fatalf("PGBENCH_RANDOM_SEED=77: %v %+v", err, o)
	}
	// --random-seed overrides it.
	o, err = Parse([]string{"--random-seed", "5"}, Config{LookupEnv: env("77")})
	if err != nil || o.RandomSeed != 5 {
		t.Fatalf("--random-seed 5: %v %+v", err, o)
	}
	_, err = Parse(nil, Config{LookupEnv: env("x")})
	if err == nil || !strings.Contains(err.Error(), "error while setting random seed from PGBENCH_RANDOM_SEED environment variable") {
		t.Fatalf("PGBENCH_RANDOM_SEED=x: %v", err)
	}
}

// The C conversions pgbench's options rely on.
func TestCNumbers(t *testing.T) {
	for in, want := range map[string]float64{
		"10": 10, " 1e3": 1000, "10abc": 10, "1.5abc": 1.5, ".5": 0.5, "1e": 1, "1e+": 1, "-2": -2, "abc": 0, "": 0,
		"0x10": 16, "0x1p3": 8, "0x": 0, "1e400": math.Inf(1), "+.25e1x": 2.5,
	} {
		if got := atof(in); got != want {
			t.Errorf("atof(%q) = %v, want %v", in, got, want)
		}
	}
	if !math.IsNaN(atof("nan")) || !math.IsInf(atof("-Infinity"), -1) {
		t.Errorf("atof of nan/inf")
	}
	for in, want := range map[string]int32{"5": 5, " -3x": -3, "x": 0, "4294967297": 1, "99999999999999999999": -1} {
		if got := atoi(in); got != want {
			t.Errorf("atoi(%q) = %d, want %d", in, got, want)
		}
	}
	for in, want := range map[string]uint64{"5": 5, " +5": 5, "-1": math.MaxUint64, "99999999999999999999999": math.MaxUint64} {
		if got, ok := scanUint64(in); !ok || got != want {
			t.Errorf("scanUint64(%q) = %d %v, want %d", in, got, ok, want)
		}
	}
	for _, in := range []string{"", " ", "5 ", "0x5", "-", "5x"} {
		if _, ok := scanUint64(in); ok {
			t.Errorf("scanUint64(%q) accepted", in)
		}
	}
}

// Parse never panics, and what it accepts is consistent.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"-c 4 -j 2 -T 10", "-i -I dtg --partitions 3", "--cli=3 -nS --", "-b list", "-D a=b -f -@2", "--p", "-dS"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Fields(line)
		for _, major := range []int{15, 18} {
			o, err := Parse(args, Config{Major: major, Txload: txloadFlags(), Stdin: strings.NewReader("SELECT 1;\n"),
				ReadFile: func(string) ([]byte, error) { return []byte("SELECT 1;\n"), nil }})
			if err != nil {
				var pe *Error
				if !errors.As(err, &pe) || len(pe.Lines) == 0 {
					t.Fatalf("%q: error %T %v", line, err, err)
				}
				continue
			}
			if o.Mode == Run && (o.Clients < 1 || o.Threads < 1 || o.Threads > o.Clients || len(o.Scripts) == 0 ||
				(o.Transactions > 0) == (o.Duration > 0)) {
				t.Fatalf("%q: inconsistent %+v", line, *o)
			}
		}
	})
}
