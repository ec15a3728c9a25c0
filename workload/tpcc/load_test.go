package tpcc

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/txload/txload/workload"
)

// An init interrupted in the middle of its load leaves the schema marked
// incomplete: a run or check refuses it, and init loads it again.
func TestInitInterrupted(t *testing.T) {
	url := srv.NewDatabase(t)
	g := newGenerator()
	if err := g.validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(2*time.Second, cancel)
	var log strings.Builder
	err := g.initTPCC(ctx, target(t, url), workload.InitOptions{Log: &log})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("init after the interrupt: %v, want context.Canceled\n%s", err, log.String())
	}
	_, err = g.check(t.Context(), target(t, url))
	var ie *workload.IncompleteError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "the tpcc schema is incomplete (an init was interrupted)") {
		t.Fatalf("check of an interrupted init: %v, want the incomplete schema refused", err)
	}
	out, err := initDB(t, url)
	if err != nil || !strings.Contains(out, "the 12 consistency conditions hold") {
		t.Fatalf("init again: %v\n%s", err, out)
	}
	if _, err := g.check(t.Context(), target(t, url)); err != nil {
		t.Fatalf("check after the second init: %v", err)
	}
}

// init --drop (a run's --init fresh) without --warehouses recreates the
// warehouses the database held, not the flag's default one; given, the
// flag wins.
func TestDropKeepsWarehouses(t *testing.T) {
	g := newGenerator()
	fs := g.Flags()
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	have := map[string]string{"warehouses": "10", "partitions": "5", "fks": "true"}
	if err := g.cfg.take(have, fs, "init tpcc", true); err != nil {
		t.Fatal(err)
	}
	if g.cfg.warehouses != 10 || g.cfg.partitions != 5 || !g.cfg.fks {
		t.Fatalf("recreated with %+v, want the database's 10 warehouses, 5 partitions, foreign keys", g.cfg)
	}
	g = newGenerator()
	if err := g.Flags().Parse([]string{"--warehouses", "2"}); err != nil {
		t.Fatal(err)
	}
	if err := g.cfg.take(have, g.Flags(), "init tpcc", true); err != nil {
		t.Fatal(err)
	}
	if g.cfg.warehouses != 2 || g.cfg.partitions != 0 || !g.cfg.fks {
		t.Fatalf("recreated with %+v, want --warehouses 2, no partitions (5 > 2), foreign keys", g.cfg)
	}
}
