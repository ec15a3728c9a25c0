package runner_test

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/txload/txload/internal/runner"
	"github.com/txload/txload/workload"
)

// Init and Check are init's and check's one call each: flags validated
// before the target is touched, the schema loaded once and kept, other
// settings refused, and the audit printed from what the server holds.
func TestInitCheck(t *testing.T) {
	url := srv.NewDatabase(t)
	target := runner.TargetOptions{URLs: []string{url}}
	gen := func(args ...string) workload.Generator {
		g := helloMeta().New()
		if err := g.Flags().Parse(args); err != nil {
			t.Fatal(err)
		}
		return g
	}
	var ue *runner.UsageError
	// Validated first: the URL is never dialled.
	if err := runner.Init(t.Context(), gen("--rows", "0"), runner.TargetOptions{URLs: []string{"postgres://nobody@127.0.0.1:1/x"}}, false, &bytes.Buffer{}); !errors.As(err, &ue) || !strings.Contains(err.Error(), "--rows must be at least 1") {
		t.Fatalf("Init with --rows 0: %v, want a usage error", err)
	}
	var log bytes.Buffer
	if err := runner.Init(t.Context(), gen("--rows", "5"), target, false, &log); err != nil {
		t.Fatalf("Init: %v\n%s", err, log.String())
	}
	log.Reset()
	if err := runner.Init(t.Context(), gen("--rows", "5"), target, false, &log); err != nil || !strings.Contains(log.String(), "init: hello schema already holds 5 rows") {
		t.Fatalf("Init again: %v\n%s", err, log.String())
	}
	var se *workload.SettingsError
	if err := runner.Init(t.Context(), gen("--rows", "7"), target, false, &log); !errors.As(err, &se) {
		t.Fatalf("Init with other settings: %v, want a SettingsError", err)
	}
	var out bytes.Buffer
	if err := runner.Check(t.Context(), gen(), target, &out, &log); err != nil {
		t.Fatalf("Check: %v\n%s", err, log.String())
	}
	if !regexp.MustCompile(`(?m)^bumps:\s+0$`).MatchString(out.String()) {
		t.Errorf("Check printed:\n%s", out.String())
	}
}

func TestInstance(t *testing.T) {
	for _, c := range []struct {
		instance  string
		instances int
		jobIndex  string
		i, n      int
		err       string
	}{
		{"", 0, "", 0, 0, ""},
		{"", 0, "3", 0, 0, ""},
		{"1/3", 0, "", 1, 3, ""},
		{"", 4, "2", 2, 4, ""},
		{"1/3", 3, "1", 0, 0, "give --instance i/N or --instances N, not both"},
		{"", 3, "", 0, 0, "--instances 3 needs $JOB_COMPLETION_INDEX (set by a Kubernetes Indexed Job), or give --instance i/N"},
		{"3/3", 0, "", 0, 0, `--instance "3/3": want i/N`},
		{"", 3, "5", 0, 0, `--instance "5/3": want i/N`},
	} {
		i, n, err := runner.Instance(c.instance, c.instances, c.jobIndex)
		var ue *runner.UsageError
		switch {
		case c.err == "" && (err != nil || i != c.i || n != c.n):
			t.Errorf("Instance(%q, %d, %q) = %d, %d, %v; want %d, %d", c.instance, c.instances, c.jobIndex, i, n, err, c.i, c.n)
		case c.err != "" && (!errors.As(err, &ue) || !strings.HasPrefix(err.Error(), c.err)):
			t.Errorf("Instance(%q, %d, %q): %v, want the usage error %q", c.instance, c.instances, c.jobIndex, err, c.err)
		}
	}
}
