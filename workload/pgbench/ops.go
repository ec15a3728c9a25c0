package pgbench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
	"github.com/txload/txload/workload/pgbench/expr"
	"github.com/txload/txload/workload/pgbench/script"
)

// The protocols, by their short names here.
const (
	simple   = script.Simple
	extended = script.Extended
	prepared = script.Prepared
)

// parseProtocol reads --protocol.
func parseProtocol(s string) (script.Protocol, error) {
	if p, ok := script.ParseProtocol(s); ok {
		return p, nil
	}
	return 0, fmt.Errorf("--protocol %q is not allowed (allowed: simple, extended, prepared)", s)
}

// ops reads the scale and returns one operation per script, run by the
// executor's I/O loops.
func (g *runGen) ops(ctx context.Context, t *pg.Target, opts workload.RunOptions) (*workload.QueryLoad, error) {
	if opts.Marks != nil {
		if err := g.markable(); err != nil {
			return nil, err
		}
	}
	scale := g.tpcb.scale
	var before *tpcbAudit
	var id *identity
	if g.builtin != "" || len(g.builtins) > 0 || g.presetBuiltin {
		conn, err := t.Connect(ctx)
		if err != nil {
			return nil, err
		}
		defer conn.Close(context.WithoutCancel(ctx))
		// pgbench's command line runs on whatever tables are there, as
		// pgbench does; the caller has read them (ReadTableInfo).
		if g.preset == nil {
			if err := requireTables(ctx, conn); err != nil {
				return nil, err
			}
		}
		detected, err := detectScale(ctx, conn)
		if err != nil {
			return nil, err
		}
		if g.tpcb.scaleExplicit() && detected != g.tpcb.scale && opts.Log != nil {
			fmt.Fprintf(opts.Log, "warning: --scale %d ignored, using the scale of pgbench_branches: %d\n", g.tpcb.scale, detected)
		}
		scale = detected
		if g.builtin == "tpcb-like" || g.builtin == "simple-update" {
			// The audit holds the run to what it changed: the tables and
			// the history's identity before it.
			id = &identity{seed: rand.Uint64()}
			// The history's mtime is CURRENT_TIMESTAMP in the writer's
			// time zone: every session of the run from here on (the
			// audit before it, its clients and their reconnections, the
			// audit after it) is pinned to the zone its first session
			// saw, so that one changed on the server during the run
			// (ALTER DATABASE ... SET timezone) moves no row the run
			// wrote out of its window. Not on CockroachDB (it reports
			// crdb_version), where the startup parameter is untried.
			pc := conn.PgConn()
			if zone := pc.ParameterStatus("TimeZone"); zone != "" && pc.ParameterStatus("crdb_version") == "" {
				t.PinSetting("TimeZone", zone)
			}
			if before, err = runTPCBAudit(ctx, t, id, true, nil); err != nil {
				return nil, err
			}
		}
	}
	if err := recordRun(ctx, t, g.recordNames(), opts.Log); err != nil {
		return nil, err
	}
	seed := opts.Seed
	if g.randomSeed != "" {
		seed, _ = strconv.ParseUint(g.randomSeed, 10, 64)
	}
	// Client i draws what pgbench's client i draws under --random-seed.
	clientSeeds, defaultSeed := expr.PgbenchSeeds(seed, opts.FirstClient+opts.Concurrency)
	clientSeed := func(id int) uint64 {
		if id += opts.FirstClient; id < len(clientSeeds) {
			return clientSeeds[id]
		}
		return seed ^ uint64(id)
	}
	load := &workload.QueryLoad{OpInfo: g.opInfo(), Scale: scale, Protocol: g.mode.String()}
	if id != nil {
		// Every committed transaction adds one history row, and its delta to
		// the rows the builtin moves.
		load.Report = func(ctx context.Context, total *metrics.Snapshot) (*workload.CheckResult, error) {
			return runAudit(ctx, t, ruleOf(g.builtin), total.Ops[0], before, id)
		}
	}
	weights := make([]int, len(g.scripts))
	total := 0
	for i, s := range g.scripts {
		load.Ops = append(load.Ops, s.Name)
		load.Statements = append(load.Statements, len(s.Commands))
		total += s.Weight
		weights[i] = total
	}
	// Choosing the script has its own generator, as in pgbench, so a mix
	// does not shift the scripts' own draws.
	load.Chooser = func(id int) func() int {
		if len(weights) == 1 {
			return func() int { return 0 }
		}
		choice := rand.New(rand.NewPCG(clientSeed(id), 0x6a09e667f3bcc908))
		return func() int {
			r := choice.IntN(total)
			for i, cum := range weights {
				if r < cum {
					return i
				}
			}
			return len(weights) - 1
		}
	}
	load.Drive = workload.Programs(t, func(client int) workload.Program {
		vars := make(map[string]expr.Value, len(g.vars)+4)
		for k, v := range g.vars {
			vars[k] = v
		}
		// pgbench's builtin variables, as pgbench sets them: --define
		// wins over scale and default_seed, not over client_id and
		// random_seed.
		for k, v := range map[string]int64{"scale": int64(scale), "default_seed": defaultSeed} {
			if _, ok := vars[k]; !ok {
				vars[k] = expr.Value{Kind: expr.Int, I: v}
			}
		}
		vars["client_id"] = expr.Value{Kind: expr.Int, I: int64(opts.FirstClient + client)}
		vars["random_seed"] = expr.Value{Kind: expr.Int, I: int64(seed)}
		p := g.newProgram(client, opts.FirstClient+client, clientSeed(client), vars, opts.Log, defaultSeed, workload.NewMark(opts, client, g.markName()))
		if id != nil {
			p.ident = id.ender(p)
		}
		if g.debug && opts.Log != nil {
			p.trace = newTracer(opts.Log, opts.FirstClient+client, g.scripts)
		}
		return p
	})
	return load, nil
}
