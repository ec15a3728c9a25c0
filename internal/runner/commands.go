package runner

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// Open validates a workload's flags and the target, then opens it: what
// init and check work on. Bad flags are a UsageError.
func Open(ctx context.Context, g workload.Generator, target TargetOptions, log io.Writer) (*Conn, workload.Hooks, error) {
	return open(ctx, g, target, log, false)
}

// open is Open; for check, with the workload's CheckValidate if it has one.
func open(ctx context.Context, g workload.Generator, target TargetOptions, log io.Writer, check bool) (*Conn, workload.Hooks, error) {
	h := g.Hooks()
	validate := h.Validate
	if check && h.CheckValidate != nil {
		validate = h.CheckValidate
	}
	if validate != nil {
		if err := validate(); err != nil {
			return nil, h, Usage(err)
		}
	}
	r, err := target.Resolve()
	if err != nil {
		return nil, h, err
	}
	conn, err := r.Open(ctx, log)
	return conn, h, err
}

// Init creates and loads a workload's schema on the target (init's one
// call); its progress goes to log.
func Init(ctx context.Context, g workload.Generator, target TargetOptions, drop bool, log io.Writer) error {
	conn, h, err := Open(ctx, g, target, log)
	if err != nil {
		return err
	}
	defer conn.Close()
	if conn.Embedded {
		fmt.Fprintln(log, "note: no --url: this loads a throwaway embedded server, removed when init ends; give --url to keep the data")
	}
	return ownHint(conn.Target, h.Init(ctx, conn.Target, workload.InitOptions{Drop: drop, Log: log}))
}

// ownHint adds to err, a step of txload's own that failed, the target's
// explanation when a server's timeout it could not turn off cut it.
func ownHint(t *pg.Target, err error) error {
	if hint := t.OwnTimeoutHint(err); hint != "" {
		return fmt.Errorf("%w (%s)", err, hint)
	}
	return err
}

// Check audits the data a workload left on the target and prints what it
// found on w (check's one call): a *ViolationError when it found an anomaly
// the transactions' isolation level forbids.
func Check(ctx context.Context, g workload.Generator, target TargetOptions, w, log io.Writer) error {
	conn, h, err := open(ctx, g, target, log, true)
	if err != nil {
		return err
	}
	defer conn.Close()
	res, err := h.Check(ctx, conn.Target)
	if err != nil {
		return ownHint(conn.Target, err)
	}
	PrintCheck(w, res.Printable())
	if len(res.Violations) > 0 {
		return &ViolationError{Violations: res.Violations}
	}
	return nil
}

// Instance reads --instance i/N, or --instances N with the index a
// Kubernetes Indexed Job gives ($JOB_COMPLETION_INDEX, jobIndex): this
// process is load generator i of n; n is 0 for a single process. Bad input
// is a UsageError.
func Instance(instance string, instances int, jobIndex string) (i, n int, err error) {
	switch {
	case instance != "" && instances != 0:
		return 0, 0, Usagef("give --instance i/N or --instances N, not both")
	case instance != "":
		i, n, err = ParseInstance(instance)
	case instances != 0:
		if jobIndex == "" {
			return 0, 0, Usagef("--instances %d needs $JOB_COMPLETION_INDEX (set by a Kubernetes Indexed Job), or give --instance i/N", instances)
		}
		i, n, err = ParseInstance(jobIndex + "/" + strconv.Itoa(instances))
	}
	return i, n, Usage(err)
}
