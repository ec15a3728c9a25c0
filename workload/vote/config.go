package vote

import (
	"fmt"
	"math"
	"time"

	"github.com/spf13/pflag"

	"github.com/txload/txload/workload"
)

// Meta registers the workload.
func Meta() workload.Meta {
	return workload.Meta{
		Name:        "vote",
		Description: "Noria's vote benchmark: read-mostly article vote counts by join, counter column or refreshed materialized view (with its staleness)",
		Examples: `  txload run vote --variant join --articles 100000 --write-every 20 --duration 30s
  txload run vote --variant counter --distribution zipf --zipf-exponent 1.15 --read-batch 10
  txload run vote --variant matview --refresh 500ms --rate 2000
  txload check vote`,
		New: func() workload.Generator { return newGenerator() },
	}
}

type config struct {
	articles     int64
	writeEvery   int
	distribution string
	zipfExponent float64
	readBatch    int
	variant      string
	refresh      time.Duration
}

type gen struct {
	flags *pflag.FlagSet
	cfg   config
}

func newGenerator() *gen {
	g := &gen{flags: pflag.NewFlagSet("vote", pflag.ContinueOnError)}
	f, c := g.flags, &g.cfg
	f.Int64Var(&c.articles, "articles", 100000, "number of articles")
	f.IntVar(&c.writeEvery, "write-every", 20, "one operation in N is a vote, the others reads")
	f.StringVar(&c.distribution, "distribution", "uniform", "how articles are picked: uniform | zipf")
	f.Float64Var(&c.zipfExponent, "zipf-exponent", 1.15, "exponent s of --distribution zipf (any s > 0)")
	f.IntVar(&c.readBatch, "read-batch", 1, "articles fetched by one read")
	f.StringVar(&c.variant, "variant", "join", "how vote counts are read: join | counter | matview")
	f.DurationVar(&c.refresh, "refresh", time.Second, "--variant matview: interval between refreshes of the view")
	// check audits against what init and the runs recorded (txload_init,
	// vote_variant): it says it ignored these.
	workload.IgnoredBy(f, workload.VerbCheck, "articles", "write-every", "distribution", "zipf-exponent", "read-batch", "variant", "refresh")
	return g
}

func (g *gen) Flags() *pflag.FlagSet { return g.flags }

// Hooks: vote can be initialised, run and checked.
func (g *gen) Hooks() workload.Hooks {
	return workload.Hooks{
		Validate: g.validate,
		Init:     workload.InitSchema(g.schema),
		Ops:      g.ops,
		Check:    g.check,
		Tables:   []string{"article", "vote"},
		// A vote is marked in its transaction (a read writes nothing).
		MarkTransactions: func() error { return nil },
	}
}

func (g *gen) validate() error {
	c := &g.cfg
	if c.articles < 1 {
		return fmt.Errorf("--articles must be at least 1, got %d", c.articles)
	}
	if c.writeEvery < 1 {
		return fmt.Errorf("--write-every must be at least 1, got %d", c.writeEvery)
	}
	switch c.distribution {
	case "uniform", "zipf":
	default:
		return fmt.Errorf("--distribution %q is not allowed (allowed: uniform, zipf)", c.distribution)
	}
	if !(c.zipfExponent > 0) || math.IsInf(c.zipfExponent, 1) {
		return fmt.Errorf("--zipf-exponent must be a finite number greater than 0, got %g", c.zipfExponent)
	}
	if c.readBatch < 1 || int64(c.readBatch) > c.articles {
		return fmt.Errorf("--read-batch must be between 1 and --articles (%d), got %d", c.articles, c.readBatch)
	}
	switch c.variant {
	case "join", "counter", "matview":
	default:
		return fmt.Errorf("--variant %q is not allowed (allowed: join, counter, matview)", c.variant)
	}
	if c.refresh <= 0 {
		return fmt.Errorf("--refresh must be greater than 0, got %s", c.refresh)
	}
	return nil
}
