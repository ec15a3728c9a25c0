package pgbench

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
	"github.com/txload/txload/workload/pgbench/expr"
	"github.com/txload/txload/workload/pgbench/script"
)

// Metas returns the pgbench family's workloads.
func Metas() []workload.Meta {
	metas := []workload.Meta{tpcbMeta()}
	for _, b := range []struct{ name, desc string }{
		{"tpcb-like", "pgbench's default transaction: update an account, a teller and a branch, insert history (TPC-B, sort of)"},
		{"simple-update", "pgbench's simple-update: tpcb-like without the teller and branch updates"},
		{"select-only", "pgbench's select-only: one primary-key lookup of an account"},
	} {
		metas = append(metas, workload.Meta{
			Name: b.name, Description: b.desc,
			Examples: fmt.Sprintf(`  txload run %s --concurrency 8 --duration 1m --protocol prepared
  txload run %s --rate 1000 --latency-limit 50ms --output pgbench`, b.name, b.name),
			New: func() workload.Generator { return newRunGen(b.name) },
		})
	}
	metas = append(metas, workload.Meta{
		Name:        "script",
		Description: "pgbench script files run unmodified: \\set expressions, \\if, \\gset, pipelines, weights",
		Examples: `  txload run script --file tpcb-original.sql --concurrency 8 --duration 1m --max-tries 10
  txload run script --file read.sql@9 --file write.sql@1 --define scale=50 --protocol prepared`,
		New: func() workload.Generator { return newRunGen("") },
	})
	return metas
}

// runGen runs pgbench scripts: one builtin, or the --file/--builtin list.
type runGen struct {
	flags   *pflag.FlagSet
	builtin string // the workload's own builtin; "" for `script`
	tpcb    tpcbConfig

	files, builtins, defines []string
	protocol                 string
	randomSeed               string

	scripts []*script.Script
	vars    map[string]expr.Value
	mode    script.Protocol
	// modeSet: the protocol was given parsed (txload pgbench's -M), and
	// --protocol is not read.
	modeSet bool

	// preset are scripts parsed by the caller (`txload pgbench`);
	// presetBuiltin says one of them is a builtin.
	preset        []*script.Script
	presetBuiltin bool
	// debug: pgbench's -d lines (txload pgbench -d).
	debug bool
	// stdout takes what \shell commands print (txload pgbench: the
	// standard output, as pgbench's; else the run's log).
	stdout io.Writer
}

func newRunGen(builtin string) *runGen {
	g := &runGen{builtin: builtin, flags: pflag.NewFlagSet(builtin, pflag.ContinueOnError)}
	f := g.flags
	g.tpcb.register(f)
	if builtin == "" {
		f.StringArrayVarP(&g.files, "file", "f", nil, "pgbench script FILE[@WEIGHT]; repeat for a mix")
		f.StringArrayVarP(&g.builtins, "builtin", "b", nil, "pgbench builtin NAME[@WEIGHT] (tpcb-like, simple-update, select-only); repeat for a mix")
	}
	f.StringArrayVarP(&g.defines, "define", "D", nil, "NAME=VALUE: set a script variable; repeatable")
	f.StringVarP(&g.protocol, "protocol", "M", "simple", "simple | extended | prepared (pgbench's --protocol)")
	f.StringVar(&g.randomSeed, "random-seed", "", "seed of the scripts' random functions: an integer (default: --seed)")
	workload.IgnoredBy(f, workload.VerbCheck, "define", "protocol", "random-seed")
	return g
}

func (g *runGen) Flags() *pflag.FlagSet { return g.flags }

// Hooks: the builtins and scripts run; the builtins also init and check
// pgbench's tables. pgbench's defaults apply: one try per transaction, and
// the builtins touch no schema a user made (see requireTables).
func (g *runGen) Hooks() workload.Hooks {
	h := workload.Hooks{
		Validate:     g.validate,
		Ops:          g.ops,
		RunDefaults:  workload.RunDefaults{MaxTries: 1, Init: workload.InitSkip},
		PerStatement: true,
		SessionState: func() string {
			if g.mode != prepared {
				return ""
			}
			if g.preset != nil { // txload pgbench: what its user typed
				return "-M prepared keeps named prepared statements in the server session"
			}
			return "--protocol prepared keeps named prepared statements in the server session"
		},
	}
	h.MarkTransactions = g.markable
	h.Inputs = func() []workload.Input {
		var in []workload.Input
		for _, f := range g.files {
			if path, _, err := script.ParseFileArg(f); err == nil {
				in = append(in, workload.Input{Flag: "--file", Path: path})
			}
		}
		return in
	}
	if g.builtin != "" {
		h.Init = func(ctx context.Context, t *pg.Target, opts workload.InitOptions) error {
			return initTPCB(ctx, t, &g.tpcb, opts)
		}
		h.Check = checkOf(ruleOf(g.builtin))
		h.Tables = tpcbTables
	}
	return h
}

func (g *runGen) validate() error {
	if err := g.tpcb.validate(); err != nil {
		return err
	}
	if !g.modeSet {
		m, err := parseProtocol(g.protocol)
		if err != nil {
			return err
		}
		g.mode = m
	}
	g.scripts = nil
	if g.builtin != "" {
		s, err := script.Builtin(g.builtin)
		if err != nil {
			return err
		}
		g.scripts = append(g.scripts, s)
	}
	g.scripts = append(g.scripts, g.preset...)
	for _, b := range g.builtins {
		name, weight, err := script.ParseFileArg(b)
		if err != nil {
			return fmt.Errorf("--builtin %s: %w", b, err)
		}
		s, err := script.Builtin(name)
		if err != nil {
			return fmt.Errorf("--builtin: %w", err)
		}
		s.Weight = weight
		g.scripts = append(g.scripts, s)
	}
	for _, a := range g.files {
		path, weight, err := script.ParseFileArg(a)
		if err != nil {
			return fmt.Errorf("--file %s: %w", a, err)
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("--file: %w", err)
		}
		s, err := script.Parse(path, string(src))
		if err != nil {
			return err
		}
		s.Weight = weight
		g.scripts = append(g.scripts, s)
	}
	if len(g.scripts) == 0 {
		return fmt.Errorf("run script needs --file FILE[@WEIGHT] or --builtin NAME[@WEIGHT]")
	}
	total := 0
	for _, s := range g.scripts {
		total += s.Weight
		if g.preset != nil {
			continue // txload pgbench: as pgbench, the client aborts when it runs into them
		}
		if err := script.CheckPipelines(s); err != nil {
			return err
		}
		if g.mode == simple && hasPipeline(s) {
			return fmt.Errorf("%s: pipelines need --protocol extended or prepared (pgbench refuses them in simple mode)", s.Name)
		}
	}
	if total == 0 {
		return fmt.Errorf("the scripts' weights add up to 0: at least one must be positive")
	}
	g.vars = map[string]expr.Value{}
	for _, d := range g.defines {
		name, value, ok := strings.Cut(d, "=")
		if !ok || name == "" {
			return fmt.Errorf("--define %q: want NAME=VALUE", d)
		}
		g.vars[name] = expr.ParseValue(value)
	}
	if g.randomSeed != "" {
		if _, err := strconv.ParseUint(g.randomSeed, 10, 64); err != nil {
			return fmt.Errorf("--random-seed %q is not a non-negative integer", g.randomSeed)
		}
	}
	return nil
}

func hasPipeline(s *script.Script) bool {
	for _, c := range s.Commands {
		if c.Kind == script.StartPipeline {
			return true
		}
	}
	return false
}

// opInfo describes the scripts for the reports: pgbench's titles,
// weights, and commands as -r lists them.
func (g *runGen) opInfo() []workload.OpInfo {
	var out []workload.OpInfo
	for _, s := range g.scripts {
		op := workload.OpInfo{Title: s.Title, Weight: s.Weight}
		for i := range s.Commands {
			op.Statements = append(op.Statements, display(&s.Commands[i]))
		}
		out = append(out, op)
	}
	return out
}

// display is a command as pgbench's -r report lists it: its first line.
func display(c *script.Command) string {
	first, _, _ := strings.Cut(strings.TrimSpace(c.Text), "\n")
	return first
}
