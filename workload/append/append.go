package append

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/txload/txload/executor"
	"github.com/txload/txload/metrics"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// Meta registers the workload.
func Meta() workload.Meta {
	return workload.Meta{
		Name:        "append",
		Description: "Jepsen's list-append transactions, their history checked for isolation anomalies while the run goes (Elle's method)",
		Examples: `  txload run append --isolation serializable --concurrency 20 --duration 60s --history run.jsonl
  txload run append --isolation repeatable-read --keys 3 --history run.edn
  txload run append --embedded-version 12.3.0 --concurrency 20 --duration 60s --keys 4
  txload check history run.jsonl --isolation serializable
  txload check append --url postgres://localhost/bench --history run.jsonl --isolation serializable`,
		New: func() workload.Generator { return newGenerator() },
	}
}

// The tables: a key lives in the one its hash selects, as in Jepsen's
// PostgreSQL tests.
var tables = []string{"txn0", "txn1", "txn2"}

const schemaDDL = `
CREATE TABLE txn0 (id INT PRIMARY KEY, sk INT NOT NULL, val TEXT);
CREATE TABLE txn1 (id INT PRIMARY KEY, sk INT NOT NULL, val TEXT);
CREATE TABLE txn2 (id INT PRIMARY KEY, sk INT NOT NULL, val TEXT)`

func (g *gen) schema() workload.Schema {
	return workload.Schema{
		Workload: "append",
		Tables:   tables,
		Settings: "tables=3",
		Create:   schemaDDL,
		Describe: "3 empty tables",
	}
}

// init makes the tables, refused while a run goes (guard): --drop would
// drop them under it.
func (g *gen) init(ctx context.Context, t *pg.Target, o workload.InitOptions) error {
	gd, err := takeGuard(ctx, t)
	if err != nil {
		return err
	}
	err = g.schema().Init(ctx, t, o)
	if rerr := gd.release(ctx); err == nil {
		err = rerr
	}
	return err
}

// table is the table key k lives in.
func table(k int64) int {
	x := uint64(k) * 0x9E3779B97F4A7C15
	x ^= x >> 29
	return int(x % uint64(len(tables)))
}

// statements are the workload's statements, one set per table, made once
// per run: named (prepared once per connection). The autocommit ones run a
// single-operation transaction without BEGIN: a connection lost while one
// runs leaves its outcome unknown.
type statements struct {
	begin, commit *executor.Stmt
	// per table; [1] are the autocommit forms
	read, upsert, update, insert [2][3]*executor.Stmt
}

func newStatements(c *config) *statements {
	st := &statements{
		begin:  &executor.Stmt{SQL: c.isolation.BeginSQL(), Name: "append_begin", Begins: true},
		commit: &executor.Stmt{SQL: "COMMIT", Name: "append_commit", Commits: true},
	}
	for ac := range 2 {
		suffix := []string{"", "_ac"}[ac]
		for i, tb := range tables {
			mk := func(kind, sql string) *executor.Stmt {
				return &executor.Stmt{SQL: sql, Name: fmt.Sprintf("append_%s%d%s", kind, i, suffix), Commits: ac == 1}
			}
			st.read[ac][i] = mk("read", `SELECT val FROM `+tb+` WHERE id = $1`)
			st.upsert[ac][i] = mk("upsert", `INSERT INTO `+tb+` AS t (id, sk, val) VALUES ($1, $1, $2) ON CONFLICT (id) DO UPDATE SET val = t.val || ',' || $2`)
			st.update[ac][i] = mk("update", `UPDATE `+tb+` SET val = val || ',' || $2 WHERE id = $1`)
			st.insert[ac][i] = mk("insert", `INSERT INTO `+tb+` (id, sk, val) VALUES ($1, $1, $2)`)
		}
	}
	return st
}

// ops prepares a run: keys start above every key the tables hold, so that
// a run on kept tables checks only its own appends. The guard keeps a
// second run (or an init) off the tables from before the keys are read
// until the run's final read is done.
func (g *gen) ops(ctx context.Context, t *pg.Target, opts workload.RunOptions) (_ *workload.QueryLoad, err error) {
	gd, err := takeGuard(ctx, t)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = gd.release(ctx)
		}
	}()
	conn, err := t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := g.schema().Require(ctx, conn); err != nil {
		return nil, err
	}
	var base int64
	q := make([]string, len(tables))
	for i, tb := range tables {
		q[i] = "SELECT max(id) AS id FROM " + tb
	}
	if err := conn.QueryRow(ctx, `SELECT COALESCE(max(id), 0)::BIGINT FROM (`+strings.Join(q, " UNION ALL ")+`) m`).Scan(&base); err != nil {
		return nil, fmt.Errorf("reading the largest key: %w", err)
	}
	r, err := newRunState(&g.cfg, base+1, opts)
	if err != nil {
		return nil, err
	}
	st := newStatements(&g.cfg)
	var mu sync.Mutex
	progs := map[int]*program{}
	prog := func(id int) *program {
		mu.Lock()
		defer mu.Unlock()
		p := progs[id]
		if p == nil {
			p = &program{r: r, st: st, client: opts.FirstClient + id,
				rng: rand.New(rand.NewPCG(opts.Seed, uint64(opts.FirstClient+id)))}
			progs[id] = p
			r.programs = append(r.programs, p)
		}
		return p
	}
	programs := workload.Programs(t, func(id int) workload.Program { return prog(id) })
	return &workload.QueryLoad{
		Ops:      []string{"txn"},
		Protocol: workload.ProtocolOf(st.begin, st.commit, st.read[0][0]),
		// The Drive is the executor's, with the run's start taken as the
		// history's time 0.
		Drive: func(ctx context.Context, cs workload.Clients) error {
			ready := cs.Ready
			cs.Ready = func(start time.Time) {
				r.begin(start)
				ready(start)
			}
			return programs(ctx, cs)
		},
		Report: func(ctx context.Context, _ *metrics.Snapshot) (*workload.CheckResult, error) {
			return r.finish(ctx, t)
		},
		Close: func() {
			_, _ = r.finish(context.Background(), nil)
			if err := gd.release(context.Background()); err != nil && opts.Log != nil {
				fmt.Fprintf(opts.Log, "txload: %v\n", err)
			}
		},
	}, nil
}
