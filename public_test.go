package txload_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// externalWorkload is a workload written in another module: it can use
// only the packages outside internal/, so it compiles only if the
// contract (workload) and the types it is written in (pg, executor,
// metrics) are all public.
const externalWorkload = `package hello

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/pflag"
	"github.com/txload/txload/executor"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

type hello struct {
	flags *pflag.FlagSet
	rows  int
}

// Meta is the workload, as a registry takes it.
func Meta() workload.Meta {
	return workload.Meta{Name: "hello", Description: "bump a counter",
		New: func() workload.Generator {
			g := &hello{flags: pflag.NewFlagSet("hello", pflag.ContinueOnError)}
			g.flags.IntVar(&g.rows, "rows", 10, "rows in the table")
			return g
		}}
}

func (g *hello) Flags() *pflag.FlagSet { return g.flags }

func (g *hello) Hooks() workload.Hooks {
	return workload.Hooks{
		Validate: func() error { return nil },
		Init: workload.InitSchema(func() workload.Schema {
			return workload.Schema{Workload: "hello", Tables: []string{"hello"},
				Create: "CREATE TABLE hello (id INT PRIMARY KEY, n BIGINT NOT NULL DEFAULT 0)",
				Load: func(ctx context.Context, tx pgx.Tx) error {
					_, err := tx.Exec(ctx, "INSERT INTO hello (id) SELECT generate_series(1, $1::INT)", g.rows)
					return err
				}}
		}),
		Ops: func(ctx context.Context, t *pg.Target, opts workload.RunOptions) (*workload.QueryLoad, error) {
			bump := &executor.Stmt{SQL: "UPDATE hello SET n = n + 1 WHERE id = $1", Name: "bump"}
			return &workload.QueryLoad{Ops: []string{"bump"},
				Drive: workload.Programs(t, func(id int) workload.Program {
					return &program{bump: bump, id: int64(1 + id%g.rows)}
				})}, nil
		},
		Check: func(ctx context.Context, t *pg.Target) (*workload.CheckResult, error) {
			conn, err := t.Connect(ctx)
			if err != nil {
				return nil, err
			}
			defer conn.Close(ctx)
			var n int64
			if err := conn.QueryRow(ctx, "SELECT sum(n) FROM hello").Scan(&n); err != nil {
				return nil, err
			}
			return &workload.CheckResult{Lines: []workload.Line{{Label: "bumps", Value: fmt.Sprint(n)}}}, nil
		},
	}
}

type program struct {
	bump *executor.Stmt
	id   int64
}

func (p *program) Start(c *executor.Conn, op, attempt int) executor.Action {
	c.Bind(p.bump, executor.CaptureNone).Int(p.id).Send()
	return executor.Action{Kind: executor.Await}
}

func (p *program) Resume(c *executor.Conn) executor.Action {
	return executor.Action{Kind: executor.Finish, Err: c.Result(0).Err}
}

func (p *program) Connected(*executor.Conn) {}
`

// The public surface is honest: a workload can be written outside this
// module, against the packages outside internal/ (docs/architecture.md).
func TestPublicContract(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module of its own")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	repo, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	goMod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVersion := "1.26"
	for _, l := range strings.Split(string(goMod), "\n") {
		if v, ok := strings.CutPrefix(l, "go "); ok {
			goVersion = strings.TrimSpace(v)
		}
	}
	dir := t.TempDir()
	mod := "module example.com/hello\n\ngo " + goVersion + "\n\nrequire github.com/txload/txload v0.0.0\n\nreplace github.com/txload/txload => " + repo + "\n"
	sum, err := os.ReadFile("go.sum")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"go.mod": []byte(mod), "go.sum": sum, "hello.go": []byte(externalWorkload)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The requirements come from txload's go.mod, through the replace;
	// nothing is downloaded that txload's own build did not already.
	tidy := exec.Command(goBin, "mod", "tidy")
	tidy.Dir = dir
	tidy.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	if out, err := tidy.CombinedOutput(); err != nil {
		t.Fatalf("go mod tidy in the outside module: %v\n%s", err, out)
	}
	vet := exec.Command(goBin, "vet", "./...")
	vet.Dir = dir
	vet.Env = append(os.Environ(), "GOWORK=off")
	if out, err := vet.CombinedOutput(); err != nil {
		t.Fatalf("a workload outside the module does not build against the public packages: %v\n%s", err, out)
	}
}
