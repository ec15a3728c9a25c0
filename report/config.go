package report

import (
	"fmt"
	"strconv"
	"time"
)

// The keys of a document's configuration that its readers use (the
// summary's header, the pgbench report, merge, the HTML report), declared
// once. The runner records them from the run's own settings, whatever the
// command's flags are called (`txload pgbench`'s -c is concurrency, -j
// threads, -T duration); the command's other flags are recorded beside
// them under their own names.
const (
	// KeyConcurrency is the run's clients, of every instance together.
	KeyConcurrency = "concurrency"
	// KeyThreads is the I/O loops (or goroutines, one per client) that
	// drove this process's clients: pgbench's "number of threads".
	KeyThreads = "threads"
	// KeyDuration is the measured period (a Go duration); KeyTransactions
	// the transactions of each client, in its place.
	KeyDuration     = "duration"
	KeyTransactions = "transactions"
	// KeyWarmup is the warm-up before the measured period.
	KeyWarmup = "warmup"
	// KeyRate is the open loop's operations per second (0: closed loop),
	// KeyArrival their arrival process.
	KeyRate    = "rate"
	KeyArrival = "arrival"
	// KeyMaxTries is the attempts per transaction; 0: no limit.
	KeyMaxTries     = "max-tries"
	KeyLatencyLimit = "latency-limit"
	KeyProgress     = "progress"
	KeySeed         = "seed"
	// KeyConnect is "true" when each transaction had a connection of its
	// own (pgbench's -C); absent otherwise.
	KeyConnect = "connect"
	// KeyScale is the size of the data the run found (pgbench's scaling
	// factor, read from its tables); absent for a workload without one.
	KeyScale = "scale"
	// KeyProtocol is the query protocol: simple, extended or prepared.
	KeyProtocol = "protocol"
	// KeyFailuresDetailed is --failures-detailed: the pgbench report
	// breaks failures down.
	KeyFailuresDetailed = "failures-detailed"
	// KeyInstance and KeyInstances say the run was one share of several
	// load generators' (--instance i/N, --instances N).
	KeyInstance  = "instance"
	KeyInstances = "instances"
	// KeyURLs are the targets, their passwords masked.
	KeyURLs = "urls"
)

// olderKeys are the names documents of older txloads gave some keys
// (`txload pgbench` recorded its flags: clients, time in whole seconds,
// random-seed). They are read when the key is absent.
var olderKeys = map[string]struct {
	key     string
	seconds bool // the value is whole seconds, read as a duration
}{
	KeyConcurrency: {"clients", false},
	KeyDuration:    {"time", true},
	KeySeed:        {"random-seed", false},
}

// OlderKeys lists the keys of older documents that stand for a key of
// today's (clients for concurrency, ...).
func OlderKeys() []string {
	out := make([]string, 0, len(olderKeys))
	for _, k := range []string{KeyConcurrency, KeyDuration, KeySeed} {
		out = append(out, olderKeys[k].key)
	}
	return out
}

// ConfigString is the configuration value key of d as text ("" if
// absent), read under its older name in documents that have only that.
func (d *Document) ConfigString(key string) string {
	if s, ok := d.configText(key); ok {
		return s
	}
	old, ok := olderKeys[key]
	if !ok {
		return ""
	}
	s, _ := d.configText(old.key)
	if old.seconds && s != "" {
		if n, err := strconv.ParseFloat(s, 64); err == nil {
			return (time.Duration(n * float64(time.Second))).String()
		}
	}
	return s
}

func (d *Document) configText(key string) (string, bool) {
	v, ok := d.Config[key]
	if !ok || v == nil {
		return "", false
	}
	return fmt.Sprint(v), true
}

func (d *Document) configFloat(key string) float64 {
	f, _ := strconv.ParseFloat(d.ConfigString(key), 64)
	return f
}

func (d *Document) configInt(key string) int {
	n, _ := strconv.Atoi(d.ConfigString(key))
	return n
}

func (d *Document) configDuration(key string) time.Duration {
	v, _ := time.ParseDuration(d.ConfigString(key))
	return v
}

// Settings is what the runner records of a run under the keys above.
type Settings struct {
	// Concurrency is the clients of every instance together; Threads
	// this process's I/O loops.
	Concurrency, Threads int
	// Schedule says Duration, Transactions, Warmup, Rate and LatencyLimit
	// describe the document's runs (a sweep's steps each have their own
	// rate: it records none of them).
	Schedule     bool
	Duration     time.Duration
	Transactions int
	Warmup       time.Duration
	Rate         float64
	LatencyLimit time.Duration
	Arrival      string
	// MaxTries 0 is no limit.
	MaxTries int
	Progress time.Duration
	Seed     uint64
	Connect  bool
	// Scale 0 and Protocol "" are not recorded.
	Scale    int
	Protocol string
	// Instance of Instances: the run was that share of several load
	// generators' (recorded as KeyInstance "i/N" when Instances > 1,
	// however the command was told).
	Instance, Instances int
}

// Record writes s into config under the keys above, over any value a
// command's flag of the same name left there.
func (s Settings) Record(config map[string]any) {
	set := func(k, v string) { config[k] = v }
	set(KeyConcurrency, strconv.Itoa(s.Concurrency))
	set(KeyThreads, strconv.Itoa(s.Threads))
	set(KeyArrival, s.Arrival)
	set(KeyMaxTries, strconv.Itoa(s.MaxTries))
	set(KeyProgress, s.Progress.String())
	set(KeySeed, strconv.FormatUint(s.Seed, 10))
	if s.Schedule {
		if s.Transactions > 0 {
			set(KeyTransactions, strconv.Itoa(s.Transactions))
			delete(config, KeyDuration)
		} else {
			set(KeyDuration, s.Duration.String())
			delete(config, KeyTransactions)
		}
		set(KeyWarmup, s.Warmup.String())
		set(KeyRate, strconv.FormatFloat(s.Rate, 'g', -1, 64))
		set(KeyLatencyLimit, s.LatencyLimit.String())
	}
	if s.Connect {
		set(KeyConnect, "true")
	}
	if s.Scale > 0 {
		set(KeyScale, strconv.Itoa(s.Scale))
	}
	if s.Protocol != "" {
		set(KeyProtocol, s.Protocol)
	}
	if s.Instances > 1 {
		set(KeyInstance, fmt.Sprintf("%d/%d", s.Instance, s.Instances))
	}
}
