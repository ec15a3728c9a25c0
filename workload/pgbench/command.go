package pgbench

import (
	"io"
	"strconv"

	"github.com/txload/txload/workload"
	"github.com/txload/txload/workload/pgbench/script"
)

// CommandConfig is what `txload pgbench` runs: the scripts of pgbench's
// command line, already read and parsed, with pgbench's settings.
type CommandConfig struct {
	// Scripts are the -b, -N, -S and -f scripts in order, weights set.
	Scripts []*script.Script
	// Builtin says a builtin runs: the scale is then pgbench_branches'
	// row count, as pgbench reads it.
	Builtin bool
	// Scale is -s: the :scale variable of custom scripts.
	Scale int
	// Defines are the -D variables, NAME=VALUE.
	Defines []string
	// Protocol is -M, as pgbenchargs read it.
	Protocol script.Protocol
	// RandomSeed seeds the scripts' random functions (--random-seed,
	// resolved).
	RandomSeed uint64
	// Debug prints pgbench's -d lines for every command of every client.
	Debug bool
	// Stdout takes what \shell commands print, as pgbench's standard
	// output does (nil: the run's log).
	Stdout io.Writer
}

// Command returns the workload that runs c: the scripts as the `script`
// workload runs them, with nothing of txload's own around them (no init,
// no check of the tables, no audit), as pgbench runs them.
func Command(c CommandConfig) (workload.Meta, workload.Generator) {
	m := workload.Meta{
		Name:        "pgbench",
		Description: "pgbench's command line: its builtins and script files",
	}
	m.New = func() workload.Generator {
		g := newRunGen("")
		g.preset, g.presetBuiltin = c.Scripts, c.Builtin
		g.tpcb.scale = max(c.Scale, 1)
		g.defines = c.Defines
		g.mode, g.modeSet = c.Protocol, true
		g.randomSeed = strconv.FormatUint(c.RandomSeed, 10)
		g.debug = c.Debug
		g.stdout = c.Stdout
		return g
	}
	return m, m.New()
}
