package bank

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// Transfer is how a transfer writes the balances.
type Transfer int

// The transfer patterns.
const (
	ReadModifyWrite Transfer = iota // read both, write client-computed balances
	Delta                           // balance = balance ± amount, no read
	ForUpdate                       // SELECT … FOR UPDATE, then write
)

var transferNames = [...]string{"read-modify-write", "delta", "for-update"}

func (t Transfer) String() string { return transferNames[t] }

func parseTransfer(s string) (Transfer, error) {
	for i, n := range transferNames {
		if s == n {
			return Transfer(i), nil
		}
	}
	return 0, fmt.Errorf("--transfer %q is not allowed (allowed: read-modify-write, delta, for-update)", s)
}

// Meta registers the workload.
func Meta() workload.Meta {
	return workload.Meta{
		Name:        "bank",
		Description: "bank transfers at an isolation level: what it costs, and the lost updates and money drift it lets through",
		Examples: `  txload run bank --isolation rc,serializable --selection 10,1000 --duration 10s
  txload run bank --isolation rc --transfer delta --concurrency 16
  txload init bank --accounts 1000000 --url postgres://root@crdb:26257/bank
  txload check bank --url postgres://root@crdb:26257/bank`,
		New: func() workload.Generator { return newGenerator() },
	}
}

// config is one combination; gen keeps the raw lists.
type config struct {
	accounts       int
	selection      int
	amount         int64
	initialBalance int64
	isolation      pg.Isolation
	transfer       Transfer
}

type gen struct {
	flags *pflag.FlagSet
	raw   struct {
		isolation, selection, transfer string
	}
	cfg  config
	isos []pg.Isolation
	sels []int
}

func newGenerator() *gen {
	g := &gen{flags: pflag.NewFlagSet("bank", pflag.ContinueOnError)}
	f := g.flags
	f.IntVar(&g.cfg.accounts, "accounts", 100000, "number of accounts")
	f.StringVar(&g.raw.selection, "selection", "10", "transfers pick two distinct accounts among the first N; a comma list runs each")
	f.Int64Var(&g.cfg.amount, "amount", 10, "amount moved by each transfer")
	f.Int64Var(&g.cfg.initialBalance, "initial-balance", 10000, "balance of every account after init")
	f.StringVar(&g.raw.isolation, "isolation", "serializable", "read committed | repeatable read | serializable (or rc, rr, ser); a comma list runs each")
	f.StringVar(&g.raw.transfer, "transfer", "read-modify-write", "read-modify-write | delta | for-update")
	// check audits against what init recorded (bank_meta, txload_init):
	// it takes these, so one command line serves every verb, and says it
	// ignored them.
	workload.IgnoredBy(f, workload.VerbCheck, "accounts", "selection", "amount", "initial-balance", "isolation", "transfer")
	return g
}

func (g *gen) Flags() *pflag.FlagSet { return g.flags }

// Hooks: the bank can be initialised, run, checked, and run as variants.
func (g *gen) Hooks() workload.Hooks {
	return workload.Hooks{
		Validate: g.validate,
		Init:     workload.InitSchema(g.schema),
		Ops:      g.ops,
		Check:    g.check,
		Variants: g.variants,
		Tables:   []string{"bank_account", "bank_ledger", "bank_meta"},
		// Every transfer is one explicit transaction: its marker goes in
		// the pipeline of its COMMIT (a declined transfer, rolled back,
		// writes none).
		MarkTransactions: func() error { return nil },
	}
}

func (g *gen) validate() error {
	c := &g.cfg
	if c.accounts < 2 || c.accounts > math.MaxInt32 {
		return fmt.Errorf("--accounts must be between 2 and %d (an INT column), got %d", math.MaxInt32, c.accounts)
	}
	if c.amount < 1 {
		return fmt.Errorf("--amount must be at least 1, got %d", c.amount)
	}
	if c.initialBalance < 0 {
		return fmt.Errorf("--initial-balance must not be negative, got %d", c.initialBalance)
	}
	// The audit adds up every balance: the total must fit in a BIGINT.
	if c.initialBalance > math.MaxInt64/int64(c.accounts) {
		return fmt.Errorf("--initial-balance %d × --accounts %d overflows the total balance (at most %d)", c.initialBalance, c.accounts, int64(math.MaxInt64))
	}
	t, err := parseTransfer(g.raw.transfer)
	if err != nil {
		return err
	}
	c.transfer = t
	g.isos, g.sels = nil, nil
	for _, s := range splitList(g.raw.isolation) {
		iso, err := pg.ParseIsolation(s)
		if err != nil {
			return fmt.Errorf("--isolation: %w", err)
		}
		g.isos = append(g.isos, iso)
	}
	for _, s := range splitList(g.raw.selection) {
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("--selection %q is not a whole number", s)
		}
		if n < 2 || n > c.accounts {
			return fmt.Errorf("--selection must be between 2 and --accounts (%d), got %d", c.accounts, n)
		}
		g.sels = append(g.sels, n)
	}
	if len(g.isos) == 0 {
		return fmt.Errorf("--isolation is empty (allowed: read committed, repeatable read, serializable)")
	}
	if len(g.sels) == 0 {
		return fmt.Errorf("--selection is empty")
	}
	c.isolation, c.selection = g.isos[0], g.sels[0]
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// variants returns one generator per (isolation, selection), or nil for one.
func (g *gen) variants() []workload.Variant {
	if len(g.isos)*len(g.sels) <= 1 {
		return nil
	}
	var out []workload.Variant
	for _, iso := range g.isos {
		for _, sel := range g.sels {
			v := &gen{flags: g.flags, raw: g.raw, cfg: g.cfg, isos: []pg.Isolation{iso}, sels: []int{sel}}
			v.cfg.isolation, v.cfg.selection = iso, sel
			out = append(out, workload.Variant{
				Labels:    []workload.Line{{Label: "isolation", Value: iso.String()}, {Label: "selection", Value: strconv.Itoa(sel)}},
				Generator: v,
			})
		}
	}
	return out
}
