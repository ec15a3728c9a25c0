// Package workloadtest takes a workload through every command a user runs
// it with, against a real PostgreSQL: the tests every workload gets by one
// call of Run (init, a closed and an open loop, check, several load
// generators merged and drawn, the pgbench format, -r, an interrupt). A
// workload written in another module uses it as this module's do:
//
//	var srv *workloadtest.Server
//
//	func TestMain(m *testing.M) { workloadtest.Main(m, &srv) }
//
//	func TestConformance(t *testing.T) { workloadtest.Run(t, srv, hello.Meta(), workloadtest.Config{}) }
package workloadtest

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/txload/txload/internal/cli"
	"github.com/txload/txload/internal/pgtest"
	"github.com/txload/txload/workload"
)

// Server is the PostgreSQL the tests run against: the one of
// TXLOAD_TEST_URL, or an embedded server started once per test binary.
type Server = pgtest.Server

// Main runs a package's tests against one Server, then exits: call it from
// TestMain.
func Main(m *testing.M, srv **Server) { pgtest.Main(m, srv) }

// Result is what a command printed, and its exit code.
type Result struct {
	Stdout, Stderr string
	Code           int
}

// The exit codes of the commands (README's "Exit codes").
const (
	ExitOK          = cli.ExitOK
	ExitFailed      = cli.ExitFailed
	ExitUsage       = cli.ExitUsage
	ExitInterrupted = cli.ExitInterrupted
)

// Command runs the txload command line args in this process, with the
// workloads of reg, as the txload binary would, and returns what it
// printed and its exit code.
func Command(ctx context.Context, reg *workload.Registry, args ...string) Result {
	var out, errb buffer
	code := run(ctx, reg, &out, &errb, args...)
	return Result{Stdout: out.String(), Stderr: errb.String(), Code: code}
}

func run(ctx context.Context, reg *workload.Registry, stdout, stderr io.Writer, args ...string) int {
	ran := false
	root := cli.Root(cli.Env{Stdout: stdout, Stderr: stderr, Registry: reg, Version: "test",
		Getenv: func(string) string { return "" }, LookupEnv: func(string) (string, bool) { return "", false }}, &ran)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err != nil && !cli.Printed(err) {
		_, _ = io.WriteString(stderr, "txload: "+err.Error()+"\n")
	}
	return cli.ExitCode(err, ran)
}

// buffer is a buffer the progress ticker and the report may write to
// concurrently, read while it fills.
type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func (b *buffer) has(s string) bool { return strings.Contains(b.String(), s) }
