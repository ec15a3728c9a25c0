package ycsb

import (
	"fmt"
	"math"
	"strings"

	"github.com/spf13/pflag"

	"github.com/txload/txload/workload"
)

// Meta registers the workload.
func Meta() workload.Meta {
	return workload.Meta{
		Name:        "ycsb",
		Description: "YCSB's core workloads A to F: reads, updates, inserts, scans and read-modify-writes of usertable's hashed keys, zipfian, uniform, latest or hotspot",
		Examples: `  txload run ycsb --workload a --records 1000000 --duration 1m
  txload run ycsb --workload e --concurrency 64 --rate 5000
  txload run ycsb --read-proportion 0.9 --update-proportion 0.1 --request-distribution uniform
  txload check ycsb --url postgres://root@crdb:26257/ycsb`,
		New: func() workload.Generator { return newGenerator() },
	}
}

// kind is a kind of operation, in YCSB's order.
type kind uint8

const (
	read kind = iota
	update
	insert
	scan
	readModifyWrite
	kinds
)

var kindNames = [kinds]string{"read", "update", "insert", "scan", "read-modify-write"}

func (k kind) String() string { return kindNames[k] }

// distribution is a request distribution: how a key is chosen.
type distribution uint8

const (
	zipfianDist distribution = iota
	uniformDist
	latestDist
	hotspotDist
)

var distNames = []string{"zipfian", "uniform", "latest", "hotspot"}

func (d distribution) String() string { return distNames[d] }

// preset is one of YCSB's workload files (workloads/workloada…f).
type preset struct {
	proportions  [kinds]float64
	distribution distribution
	maxScan      int64
}

var presets = map[string]preset{
	"a": {proportions: [kinds]float64{read: 0.5, update: 0.5}, distribution: zipfianDist, maxScan: 1000},
	"b": {proportions: [kinds]float64{read: 0.95, update: 0.05}, distribution: zipfianDist, maxScan: 1000},
	"c": {proportions: [kinds]float64{read: 1}, distribution: zipfianDist, maxScan: 1000},
	"d": {proportions: [kinds]float64{read: 0.95, insert: 0.05}, distribution: latestDist, maxScan: 1000},
	"e": {proportions: [kinds]float64{scan: 0.95, insert: 0.05}, distribution: zipfianDist, maxScan: 100},
	"f": {proportions: [kinds]float64{read: 0.5, readModifyWrite: 0.5}, distribution: zipfianDist, maxScan: 1000},
}

// proportionFlags are the flags of the proportions, in kind order.
var proportionFlags = [kinds]string{"read-proportion", "update-proportion", "insert-proportion", "scan-proportion", "read-modify-write-proportion"}

// config is the workload, its flags validated.
type config struct {
	records      int64
	fields       int
	fieldLength  int
	proportions  [kinds]float64
	distribution distribution
	minScan      int64
	maxScan      int64
	scanZipfian  bool
	hotData      float64
	hotOpn       float64
	operations   int64
}

type gen struct {
	flags *pflag.FlagSet
	raw   struct {
		workload, distribution, scanDistribution string
		proportions                              [kinds]float64
	}
	cfg config
}

func newGenerator() *gen {
	g := &gen{flags: pflag.NewFlagSet("ycsb", pflag.ContinueOnError)}
	f := g.flags
	f.StringVar(&g.raw.workload, "workload", "a", "YCSB's core workload: a (50% read, 50% update), b (95/5), c (read only), d (read latest, 5% insert), e (short scans, 5% insert), f (50% read, 50% read-modify-write)")
	f.Int64Var(&g.cfg.records, "records", 100000, "records init loads (YCSB's recordcount)")
	f.IntVar(&g.cfg.fields, "fields", 10, "fields of a record, FIELD0… (YCSB's fieldcount)")
	f.IntVar(&g.cfg.fieldLength, "field-length", 100, "characters of each field (YCSB's fieldlength); the first 8 are the value's checksum")
	for k := range kinds {
		f.Float64Var(&g.raw.proportions[k], proportionFlags[k], 0, "share of "+kindNames[k]+" operations (default: the --workload's)")
	}
	f.StringVar(&g.raw.distribution, "request-distribution", "", "how keys are chosen: zipfian (scrambled, 0.99) | uniform | latest | hotspot (default: the --workload's)")
	f.Int64Var(&g.cfg.minScan, "min-scan-length", 1, "fewest records a scan reads")
	f.Int64Var(&g.cfg.maxScan, "max-scan-length", 0, "most records a scan reads (default: 100 for workload e, else 1000)")
	f.StringVar(&g.raw.scanDistribution, "scan-length-distribution", "uniform", "uniform | zipfian: the length of a scan between the two")
	f.Float64Var(&g.cfg.hotData, "hotspot-data-fraction", 0.2, "hotspot: the share of the records that is hot")
	f.Float64Var(&g.cfg.hotOpn, "hotspot-opn-fraction", 0.8, "hotspot: the share of the operations on the hot records")
	f.Int64Var(&g.cfg.operations, "operation-count", 1000, "YCSB's operationcount, for the zipfian's key space only: records + 2 × insert proportion × this (the run's length is --duration or --transactions)")
	// The operations' mix and keys: check audits the table whatever
	// operations made it, and says it ignores these (a check is rerun
	// with its run's flags).
	mix := []string{"workload", "request-distribution", "min-scan-length", "max-scan-length",
		"scan-length-distribution", "hotspot-data-fraction", "hotspot-opn-fraction", "operation-count",
		proportionFlags[read], proportionFlags[update], proportionFlags[insert], proportionFlags[scan], proportionFlags[readModifyWrite]}
	workload.OnlyFor(f, workload.VerbRun|workload.VerbSweep|workload.VerbFailover|workload.VerbCheck, mix...)
	// check audits against what init recorded (ycsb_meta, txload_init):
	// it says it ignored these.
	workload.IgnoredBy(f, workload.VerbCheck, append([]string{"records", "fields", "field-length"}, mix...)...)
	return g
}

func (g *gen) Flags() *pflag.FlagSet { return g.flags }

// Limits of the flags.
const (
	maxRecords     = math.MaxInt32 // YCSB draws keys as ints
	maxFields      = 1000
	minFieldLength = checksumLen + 1
	maxFieldLength = 1 << 16
	maxScanLength  = 100000
	maxOperations  = 1e9
)

// validate checks the flags and makes the configuration: the workload's
// preset, with the flags given in its place.
func (g *gen) validate() error {
	c := &g.cfg
	p, ok := presets[strings.ToLower(g.raw.workload)]
	if !ok {
		return fmt.Errorf("--workload %q is not allowed (allowed: a, b, c, d, e, f)", g.raw.workload)
	}
	switch {
	case c.records < 1 || c.records > maxRecords:
		return fmt.Errorf("--records must be between 1 and %d, got %d", maxRecords, c.records)
	case c.fields < 1 || c.fields > maxFields:
		return fmt.Errorf("--fields must be between 1 and %d, got %d", maxFields, c.fields)
	case c.fieldLength < minFieldLength || c.fieldLength > maxFieldLength:
		return fmt.Errorf("--field-length must be between %d (an 8-character checksum and one more) and %d, got %d", minFieldLength, maxFieldLength, c.fieldLength)
	}
	c.proportions = p.proportions
	given := false
	for k := range kinds {
		if g.flags.Changed(proportionFlags[k]) {
			given = true
		}
	}
	if given {
		// Proportions as flags replace the workload's mix: those not
		// given are 0.
		c.proportions = g.raw.proportions
	}
	sum := 0.0
	for k, v := range c.proportions {
		if math.IsNaN(v) || v < 0 || v > 1 {
			return fmt.Errorf("--%s must be between 0 and 1, got %v", proportionFlags[k], v)
		}
		sum += v
	}
	if sum == 0 {
		return fmt.Errorf("the proportions add up to 0: give at least one of --%s above 0", strings.Join(proportionFlags[:], ", --"))
	}
	c.distribution = p.distribution
	if g.raw.distribution != "" {
		i := indexOf(distNames, g.raw.distribution)
		if i < 0 {
			return fmt.Errorf("--request-distribution %q is not allowed (allowed: %s)", g.raw.distribution, strings.Join(distNames, ", "))
		}
		c.distribution = distribution(i)
	}
	if !g.flags.Changed("max-scan-length") {
		c.maxScan = p.maxScan
	}
	switch g.raw.scanDistribution {
	case "uniform", "zipfian":
		c.scanZipfian = g.raw.scanDistribution == "zipfian"
	default:
		return fmt.Errorf("--scan-length-distribution %q is not allowed (allowed: uniform, zipfian)", g.raw.scanDistribution)
	}
	switch {
	case c.minScan < 1 || c.minScan > maxScanLength:
		return fmt.Errorf("--min-scan-length must be between 1 and %d, got %d", maxScanLength, c.minScan)
	case c.maxScan < c.minScan || c.maxScan > maxScanLength:
		return fmt.Errorf("--max-scan-length must be between --min-scan-length (%d) and %d, got %d", c.minScan, maxScanLength, c.maxScan)
	case c.operations < 0 || c.operations > maxOperations:
		return fmt.Errorf("--operation-count must be between 0 and %d, got %d", int64(maxOperations), c.operations)
	case math.IsNaN(c.hotData) || c.hotData <= 0 || c.hotData >= 1:
		return fmt.Errorf("--hotspot-data-fraction must be above 0 and below 1, got %v", c.hotData)
	case math.IsNaN(c.hotOpn) || c.hotOpn < 0 || c.hotOpn > 1:
		return fmt.Errorf("--hotspot-opn-fraction must be between 0 and 1, got %v", c.hotOpn)
	}
	if c.distribution == latestDist && c.records < 2 {
		return fmt.Errorf("--request-distribution latest needs --records 2 at least (YCSB's zipfian over the records before the newest), got %d", c.records)
	}
	if c.distribution == hotspotDist {
		if hot := int64(float64(c.records) * c.hotData); hot < 1 || hot == c.records {
			return fmt.Errorf("--hotspot-data-fraction %v of --records %d makes %d hot records: both the hot and the cold set need one at least", c.hotData, c.records, hot)
		}
	}
	return nil
}

func indexOf(names []string, s string) int {
	for i, n := range names {
		if n == s {
			return i
		}
	}
	return -1
}

// expectedInserts is YCSB's expectednewkeys: the zipfian's key space
// reaches this far beyond the records, so that the keys inserted during the
// run are drawn too without the popular ones moving.
func (c *config) expectedInserts() int64 {
	return int64(float64(c.operations) * c.proportions[insert] * 2)
}
