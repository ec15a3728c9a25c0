package runner_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/pflag"

	"github.com/txload/txload/engine"
	"github.com/txload/txload/executor"
	"github.com/txload/txload/internal/pgtest"
	"github.com/txload/txload/internal/runner"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// hello is the smallest complete workload, run here through the runner
// alone (docs/architecture.md's recipe is its twin, built in a module of
// its own by TestPublicContract): one flag, a schema, one operation, a
// check.
type hello struct {
	flags *pflag.FlagSet
	rows  int
}

func helloMeta() workload.Meta {
	return workload.Meta{
		Name:        "hello",
		Description: "bump a counter in one of --rows rows",
		New: func() workload.Generator {
			g := &hello{flags: pflag.NewFlagSet("hello", pflag.ContinueOnError)}
			g.flags.IntVar(&g.rows, "rows", 10, "rows in the table")
			return g
		},
	}
}

func (g *hello) Flags() *pflag.FlagSet { return g.flags }

func (g *hello) Hooks() workload.Hooks {
	return workload.Hooks{
		Validate: func() error {
			if g.rows < 1 {
				return fmt.Errorf("--rows must be at least 1, got %d", g.rows)
			}
			return nil
		},
		Init:  workload.InitSchema(g.schema),
		Ops:   g.ops,
		Check: g.check,
	}
}

// schema: init creates and loads the table in one transaction, and marks it
// complete; runs refuse a table it did not complete.
func (g *hello) schema() workload.Schema {
	return workload.Schema{
		Workload: "hello",
		Tables:   []string{"hello"},
		Settings: fmt.Sprintf("rows=%d", g.rows),
		Create:   "CREATE TABLE hello (id INT PRIMARY KEY, n BIGINT NOT NULL DEFAULT 0)",
		Load: func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, "INSERT INTO hello (id) SELECT generate_series(1, $1::INT)", g.rows)
			return err
		},
		Describe: fmt.Sprintf("%d rows", g.rows),
	}
}

// ops hands the engine one kind of operation and a program per client,
// which the executor runs on its I/O loops, each on its own connection.
func (g *hello) ops(ctx context.Context, t *pg.Target, opts workload.RunOptions) (*workload.QueryLoad, error) {
	bump := &executor.Stmt{SQL: "UPDATE hello SET n = n + 1 WHERE id = $1", Name: "bump"}
	if t.Pooled() {
		bump.Name = "" // a pooler's server sessions keep no prepared statement
	}
	return &workload.QueryLoad{
		Ops: []string{"bump"},
		Drive: workload.Programs(t, func(id int) workload.Program {
			return &helloProgram{bump: bump, id: int64(1 + (opts.FirstClient+id)%g.rows)}
		}),
	}, nil
}

// helloProgram bumps its row: each operation one statement, queued on the
// connection, and its result once it is in. It never blocks.
type helloProgram struct {
	bump *executor.Stmt
	id   int64
}

func (p *helloProgram) Start(c *executor.Conn, op, attempt int) executor.Action {
	c.Bind(p.bump, executor.CaptureNone).Int(p.id).Send()
	return executor.Action{Kind: executor.Await}
}

func (p *helloProgram) Resume(c *executor.Conn) executor.Action {
	return executor.Action{Kind: executor.Finish, Err: c.Result(0).Err, Stmt: 0}
}

func (p *helloProgram) Connected(*executor.Conn) {}

// check reports the bumps the table holds.
func (g *hello) check(ctx context.Context, t *pg.Target) (*workload.CheckResult, error) {
	conn, err := t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, "SELECT sum(n) FROM hello").Scan(&n); err != nil {
		return nil, err
	}
	return &workload.CheckResult{Lines: []workload.Line{{Label: "bumps", Value: fmt.Sprint(n)}}, Values: map[string]int64{"bumps": n}}, nil
}

var srv *pgtest.Server

func TestMain(m *testing.M) { pgtest.Main(m, &srv) }

// The example workload runs through the runner as any other: init, the
// engine, the summary; the table holds exactly the committed bumps.
func TestHelloWorkload(t *testing.T) {
	url := srv.NewDatabase(t)
	m := helloMeta()
	g := m.New()
	var out, errb bytes.Buffer
	opts := runner.Options{
		Command: "run", Init: "fresh", Stdout: &out, Stderr: &errb,
		Engine: engine.Config{Concurrency: 4, Duration: time.Second, MaxTries: 1, Arrival: engine.Poisson},
	}
	if err := runner.Run(t.Context(), m, g, runner.TargetOptions{URLs: []string{url}}, opts); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	if !strings.Contains(out.String(), "hello on PostgreSQL") || !strings.Contains(out.String(), "bump: ") {
		t.Fatalf("summary:\n%s", out.String())
	}
	tg, _ := pg.NewTarget([]string{url})
	res, err := g.Hooks().Check(t.Context(), tg)
	if err != nil {
		t.Fatal(err)
	}
	// The table holds what the summary counts and what committed in the
	// drain after the window (its own line).
	var ok, drained, inFlight int64
	fmt.Sscanf(out.String()[strings.Index(out.String(), "bump: "):], "bump: %d ok", &ok)
	if i := strings.Index(out.String(), "drain: "); i >= 0 {
		fmt.Sscanf(out.String()[i:], "drain: %d operations in flight when the window ended, not in the figures below: %d committed", &inFlight, &drained)
	}
	if ok == 0 || res.Values["bumps"] != ok+drained {
		t.Fatalf("table holds %d bumps, the run committed %d\n%s", res.Values["bumps"], ok, out.String())
	}
	// hello has a Check and no Report: the run ends with its audit, as
	// `txload check hello` prints it (issue 38 §1: it printed none).
	var audited int64
	if i := strings.Index(out.String(), "\nbumps:"); i < 0 || !strings.Contains(out.String(), "\ncheck: ok\n") {
		t.Fatalf("the run printed no audit:\n%s", out.String())
	} else if fmt.Sscanf(strings.Join(strings.Fields(out.String()[i:]), " "), "bumps: %d", &audited); audited != res.Values["bumps"] {
		t.Fatalf("the run's audit counted %d bumps, the table holds %d\n%s", audited, res.Values["bumps"], out.String())
	}
}
