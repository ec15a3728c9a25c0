package pgbenchargs

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/txload/txload/workload/pgbench/script"
)

// The pgbench versions whose command line Parse follows.
const (
	MinMajor = 15
	MaxMajor = 18
	// DefaultMajor is followed unless Config.Major or --pgbench-version
	// says otherwise.
	DefaultMajor = MaxMajor
)

// VersionFlag is txload's own option that chooses the pgbench whose
// command line is followed: --pgbench-version 15 makes -d --debug.
const VersionFlag = "pgbench-version"

// Config is what Parse needs from its surroundings.
type Config struct {
	// Prog names the program in messages ("pgbench").
	Prog string
	// Major is the pgbench version to follow, 15 to 18 (0 = DefaultMajor);
	// --pgbench-version on the command line overrides it.
	Major int
	// LookupEnv reads PGBENCH_RANDOM_SEED (nil: no environment).
	LookupEnv func(string) (string, bool)
	// ReadFile reads -f scripts (nil: os.ReadFile); Stdin is "-f -".
	ReadFile func(string) ([]byte, error)
	Stdin    io.Reader
	// Txload holds txload's own flags: a long option that is not
	// pgbench's and is one of these passes through to Options.Txload.
	Txload *pflag.FlagSet
	// Now and Random resolve --random-seed time and rand (nil: the clock
	// and crypto/rand).
	Now    func() time.Time
	Random io.Reader
}

// optID identifies an option, as pgbench's switch does.
type optID int

const (
	oBuiltin optID = iota + 1
	oClient
	oConnect
	oDebug
	oDBName
	oDefine
	oFile
	oFillfactor
	oHost
	oInitialize
	oInitSteps
	oJobs
	oLog
	oLatencyLimit
	oNoVacuum
	oPort
	oProgress
	oProtocol
	oQuiet
	oReportPerCommand
	oRate
	oScale
	oSelectOnly
	oSkipSomeUpdates
	oTime
	oTransactions
	oUsername
	oVacuumAll
	oUnloggedTables
	oTablespace
	oIndexTablespace
	oSamplingRate
	oAggregateInterval
	oProgressTimestamp
	oLogPrefix
	oForeignKeys
	oRandomSeed
	oShowScript
	oPartitions
	oPartitionMethod
	oFailuresDetailed
	oMaxTries
	oVerboseErrors
	oExitOnAbort
)

// table returns pgbench's getopt_long table for major: its option string
// "b:c:Cd:D:f:F:h:iI:j:lL:M:nNp:P:qrR:s:St:T:U:v" and long_options[], in
// pgbench's order (glibc lists ambiguous candidates in that order).
func table(major int) (map[byte]shortOpt, []longOpt) {
	short := map[byte]shortOpt{
		'b': {true, oBuiltin}, 'c': {true, oClient}, 'C': {false, oConnect},
		'D': {true, oDefine}, 'f': {true, oFile}, 'F': {true, oFillfactor},
		'h': {true, oHost}, 'i': {false, oInitialize}, 'I': {true, oInitSteps},
		'j': {true, oJobs}, 'l': {false, oLog}, 'L': {true, oLatencyLimit},
		'M': {true, oProtocol}, 'n': {false, oNoVacuum}, 'N': {false, oSkipSomeUpdates},
		'p': {true, oPort}, 'P': {true, oProgress}, 'q': {false, oQuiet},
		'r': {false, oReportPerCommand}, 'R': {true, oRate}, 's': {true, oScale},
		'S': {false, oSelectOnly}, 't': {true, oTransactions}, 'T': {true, oTime},
		'U': {true, oUsername}, 'v': {false, oVacuumAll},
	}
	dashD := longOpt{"debug", false, oDebug}
	if major >= 17 {
		short['d'] = shortOpt{true, oDBName}
		dashD = longOpt{"dbname", true, oDBName}
	} else {
		short['d'] = shortOpt{false, oDebug}
	}
	long := []longOpt{
		{"builtin", true, oBuiltin},
		{"client", true, oClient},
		{"connect", false, oConnect},
		dashD,
		{"define", true, oDefine},
		{"file", true, oFile},
		{"fillfactor", true, oFillfactor},
		{"host", true, oHost},
		{"initialize", false, oInitialize},
		{"init-steps", true, oInitSteps},
		{"jobs", true, oJobs},
		{"log", false, oLog},
		{"latency-limit", true, oLatencyLimit},
		{"no-vacuum", false, oNoVacuum},
		{"port", true, oPort},
		{"progress", true, oProgress},
		{"protocol", true, oProtocol},
		{"quiet", false, oQuiet},
		{"report-per-command", false, oReportPerCommand},
		{"rate", true, oRate},
		{"scale", true, oScale},
		{"select-only", false, oSelectOnly},
		{"skip-some-updates", false, oSkipSomeUpdates},
		{"time", true, oTime},
		{"transactions", true, oTransactions},
		{"username", true, oUsername},
		{"vacuum-all", false, oVacuumAll},
		{"unlogged-tables", false, oUnloggedTables},
		{"tablespace", true, oTablespace},
		{"index-tablespace", true, oIndexTablespace},
		{"sampling-rate", true, oSamplingRate},
		{"aggregate-interval", true, oAggregateInterval},
		{"progress-timestamp", false, oProgressTimestamp},
		{"log-prefix", true, oLogPrefix},
		{"foreign-keys", false, oForeignKeys},
		{"random-seed", true, oRandomSeed},
		{"show-script", true, oShowScript},
		{"partitions", true, oPartitions},
		{"partition-method", true, oPartitionMethod},
		{"failures-detailed", false, oFailuresDetailed},
		{"max-tries", true, oMaxTries},
		{"verbose-errors", false, oVerboseErrors},
	}
	if major >= 17 {
		long = append(long, longOpt{"exit-on-abort", false, oExitOnAbort}, longOpt{"debug", false, oDebug})
	}
	return short, long
}

// newerOptions are options of later pgbench versions: refused, as the
// version followed refuses them, with a line that says which version has
// them.
var newerOptions = map[string]string{
	"exit-on-abort":     "pgbench 17 and later",
	"dbname":            "pgbench 17 and later",
	"continue-on-error": "pgbench 19 (txload pgbench follows pgbench 15 to 18)",
}

// parser is one Parse: pgbench's main() variables.
type parser struct {
	cfg  Config
	o    *Options
	prog string

	benchmarkingOption, initializationOption bool
	initSteps                                *string
	partitionMethodSet                       bool
	logPrefixSet                             bool
	defines                                  map[string]int
}

func (p *parser) fatal(format string, args ...any) *Error {
	return &Error{Lines: []string{p.prog + ": error: " + fmt.Sprintf(format, args...)}}
}

func (p *parser) hint() string {
	return fmt.Sprintf("%s: hint: Try \"%s --help\" for more information.", p.prog, p.prog)
}

// Parse parses pgbench's command line args (without the program name) as
// the pgbench of cfg.Major does, in the order it does: an option's error
// wins over a later option's, and the cross-option checks come after all
// options, in pgbench's order. Its error is an *Error carrying pgbench's
// lines.
func Parse(args []string, cfg Config) (*Options, error) {
	if cfg.Prog == "" {
		cfg.Prog = "pgbench"
	}
	if cfg.ReadFile == nil {
		cfg.ReadFile = os.ReadFile
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Random == nil {
		cfg.Random = rand.Reader
	}
	p := &parser{cfg: cfg, prog: cfg.Prog, defines: map[string]int{}}
	o, err := p.parse(args)
	var pe *Error
	if errors.As(err, &pe) && p.o != nil && len(p.o.Notices) > 0 {
		// pgbench printed them before it failed.
		pe.Lines = append(append([]string(nil), p.o.Notices...), pe.Lines...)
	}
	return o, err
}

func (p *parser) parse(args []string) (*Options, error) {
	cfg := p.cfg
	major, args, err := p.major(args)
	if err != nil {
		return nil, err
	}
	o := &Options{
		Major: major, Scale: 1, Fillfactor: 100, Clients: 1, Jobs: 1,
		MaxTries: 1, LogPrefix: DefaultLogPrefix,
	}
	p.o = o
	if len(args) > 0 {
		switch args[0] {
		case "--help", "-?":
			o.Mode = Help
			return o, nil
		case "--version", "-V":
			o.Mode = Version
			return o, nil
		}
	}
	// pgbench seeds first, from PGBENCH_RANDOM_SEED or the time.
	seed, given := "", false
	if cfg.LookupEnv != nil {
		seed, given = cfg.LookupEnv("PGBENCH_RANDOM_SEED")
	}
	if err := p.setRandomSeed(seed, given); err != nil {
		err.Lines = append(err.Lines, p.prog+": error: error while setting random seed from PGBENCH_RANDOM_SEED environment variable")
		return nil, err
	}

	short, long := table(major)
	g := &getopt{prog: p.prog, short: short, long: long, passthrough: p.passthrough}
	stop := errors.New("stop")
	operands, passed, err := g.parse(args, func(occ occurrence) error {
		if err := p.option(occ); err != nil {
			return err
		}
		if o.Mode == ListBuiltins || o.Mode == ShowScript {
			return stop // pgbench prints and exits at once
		}
		return nil
	})
	switch {
	case errors.Is(err, stop):
		return o, nil
	case err != nil:
		var ge *getoptError
		if errors.As(err, &ge) {
			lines := []string{ge.msg}
			if name, ok := unknownLong(ge.msg); ok {
				if since, newer := newerOptions[name]; newer {
					lines = append(lines, fmt.Sprintf("%s: detail: --%s is an option of %s; this command line follows pgbench %d (give --%s to choose another)",
						p.prog, name, since, major, VersionFlag))
				}
			}
			return nil, &Error{Lines: append(lines, p.hint())}
		}
		return nil, err
	}
	o.Txload = passed
	if err := p.finish(operands); err != nil {
		return nil, err
	}
	return o, nil
}

// unknownLong extracts NAME from getopt's "unrecognized option '--NAME[=…]'".
func unknownLong(msg string) (string, bool) {
	_, rest, ok := strings.Cut(msg, "unrecognized option '--")
	if !ok {
		return "", false
	}
	rest = strings.TrimSuffix(rest, "'")
	name, _, _ := strings.Cut(rest, "=")
	return name, true
}

// major finds --pgbench-version (txload's) and removes it from args.
func (p *parser) major(args []string) (int, []string, error) {
	major := p.cfg.Major
	if major == 0 {
		major = DefaultMajor
	}
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		v, ok := strings.CutPrefix(a, "--"+VersionFlag+"=")
		if !ok && a == "--"+VersionFlag {
			if i+1 >= len(args) {
				return 0, nil, &Error{Lines: []string{p.prog + ": error: --" + VersionFlag + " needs a pgbench major version, 15 to 18"}}
			}
			i++
			v, ok = args[i], true
		}
		if !ok {
			rest = append(rest, a)
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < MinMajor || n > MaxMajor {
			return 0, nil, &Error{Lines: []string{fmt.Sprintf("%s: error: --%s %q: txload pgbench follows the command line of pgbench %d to %d",
				p.prog, VersionFlag, v, MinMajor, MaxMajor)}}
		}
		major = n
	}
	return major, rest, nil
}

// passthrough says whether --name is one of txload's flags, and whether it
// takes a value.
func (p *parser) passthrough(name string) (bool, bool) {
	if p.cfg.Txload == nil {
		return false, false
	}
	f := p.cfg.Txload.Lookup(name)
	if f == nil {
		return false, false
	}
	return true, f.NoOptDefVal == ""
}

// setRandomSeed is pgbench's set_random_seed: "time" (or no seed), "rand",
// or an unsigned integer.
func (p *parser) setRandomSeed(seed string, given bool) *Error {
	var v uint64
	switch {
	case !given || seed == "time":
		v = uint64(p.cfg.Now().UnixMicro())
	case seed == "rand":
		var b [8]byte
		if _, err := io.ReadFull(p.cfg.Random, b[:]); err != nil {
			return p.fatal("could not generate random seed")
		}
		v = binary.LittleEndian.Uint64(b[:])
	default:
		n, ok := scanUint64(seed)
		if !ok {
			return &Error{Lines: []string{
				fmt.Sprintf("%s: error: unrecognized random seed option \"%s\"", p.prog, seed),
				fmt.Sprintf("%s: detail: Expecting an unsigned integer, \"time\" or \"rand\".", p.prog),
			}}
		}
		v = n
	}
	if given {
		p.o.Notices = append(p.o.Notices, fmt.Sprintf("%s: setting random seed to %d", p.prog, v))
		p.o.RandomSeedGiven = true
	}
	p.o.RandomSeed = v
	return nil
}

// intOption is option_parse_int for the option spelled "-c/--clients".
func (p *parser) intOption(arg, name string, min, max int) (int, error) {
	v, msg := optionParseInt(arg, name, min, max)
	if msg != "" {
		return 0, p.fatal("%s", msg)
	}
	return v, nil
}

// option is one case of pgbench's getopt switch.
func (p *parser) option(occ occurrence) error {
	o := p.o
	arg := occ.arg
	var err error
	switch occ.id {
	case oBuiltin:
		if arg == "list" {
			o.Mode = ListBuiltins
			o.Output = listBuiltins()
			return nil
		}
		name, weight, werr := script.ParseFileArg(arg)
		if werr != nil {
			return p.fatal("%s", werr.Error())
		}
		if err := p.addBuiltin(name, weight); err != nil {
			return err
		}
		p.benchmarkingOption = true
	case oClient:
		p.benchmarkingOption = true
		o.Clients, err = p.intOption(arg, "-c/--clients", 1, math.MaxInt32)
	case oConnect:
		p.benchmarkingOption = true
		o.Connect = true
	case oDebug:
		o.Debug = true
	case oDBName:
		o.DBName = arg
	case oDefine:
		p.benchmarkingOption = true
		name, value, ok := strings.Cut(arg, "=")
		if !ok || name == "" || value == "" {
			return p.fatal("invalid variable definition: \"%s\"", arg)
		}
		if !script.ValidVariableName(name) {
			return p.fatal("option: invalid variable name: \"%s\"", name)
		}
		if i, dup := p.defines[name]; dup {
			o.Defines[i].Value = value
		} else {
			p.defines[name] = len(o.Defines)
			o.Defines = append(o.Defines, Define{name, value})
		}
	case oFile:
		path, weight, werr := script.ParseFileArg(arg)
		if werr != nil {
			return p.fatal("%s", werr.Error())
		}
		if err := p.addFile(path, weight); err != nil {
			return err
		}
		p.benchmarkingOption = true
	case oFillfactor:
		p.initializationOption = true
		o.Fillfactor, err = p.intOption(arg, "-F/--fillfactor", 10, 100)
	case oHost:
		o.Host = arg
	case oInitialize:
		o.Mode = Init
	case oInitSteps:
		if arg == "" {
			return p.fatal("no initialization steps specified")
		}
		for i := 0; i < len(arg); i++ {
			if !strings.ContainsRune(AllInitSteps+" ", rune(arg[i])) {
				return &Error{Lines: []string{
					fmt.Sprintf("%s: error: unrecognized initialization step \"%c\"", p.prog, arg[i]),
					fmt.Sprintf("%s: detail: Allowed step characters are: \"%s\".", p.prog, AllInitSteps),
				}}
			}
		}
		steps := arg
		p.initSteps = &steps
		p.initializationOption = true
	case oJobs:
		p.benchmarkingOption = true
		o.Jobs, err = p.intOption(arg, "-j/--jobs", 1, math.MaxInt32)
	case oLog:
		p.benchmarkingOption = true
		o.Log = true
	case oLatencyLimit:
		ms := atof(arg)
		if !(ms > 0) || math.IsInf(ms, 0) {
			// pgbench takes NaN and infinity (limit_ms <= 0.0 is false)
			// and then computes nonsense; refuse them.
			return p.fatal("invalid latency limit: \"%s\"", arg)
		}
		p.benchmarkingOption = true
		o.LatencyLimitUS = int64(ms * 1000)
	case oProtocol:
		p.benchmarkingOption = true
		var ok bool
		if o.Protocol, ok = script.ParseProtocol(arg); !ok {
			return p.fatal("invalid query mode (-M): \"%s\"", arg)
		}
	case oNoVacuum:
		o.NoVacuum = true
	case oSkipSomeUpdates:
		if err := p.addBuiltin("simple-update", 1); err != nil {
			return err
		}
		p.benchmarkingOption = true
	case oPort:
		o.Port = arg
	case oProgress:
		p.benchmarkingOption = true
		o.Progress, err = p.intOption(arg, "-P/--progress", 1, math.MaxInt32)
	case oQuiet:
		p.initializationOption = true
		o.Quiet = true
	case oReportPerCommand:
		p.benchmarkingOption = true
		o.PerCommand = true
	case oRate:
		rate := atof(arg)
		p.benchmarkingOption = true
		if !(rate > 0) || math.IsInf(rate, 0) {
			// pgbench takes NaN and infinity: refuse them too.
			return p.fatal("invalid rate limit: \"%s\"", arg)
		}
		o.Rate = rate
	case oScale:
		o.ScaleGiven = true
		o.Scale, err = p.intOption(arg, "-s/--scale", 1, math.MaxInt32)
	case oSelectOnly:
		if err := p.addBuiltin("select-only", 1); err != nil {
			return err
		}
		p.benchmarkingOption = true
	case oTransactions:
		p.benchmarkingOption = true
		o.Transactions, err = p.intOption(arg, "-t/--transactions", 1, math.MaxInt32)
	case oTime:
		p.benchmarkingOption = true
		o.Duration, err = p.intOption(arg, "-T/--time", 1, math.MaxInt32)
	case oUsername:
		o.User = arg
	case oVacuumAll:
		p.benchmarkingOption = true
		o.VacuumAll = true
	case oUnloggedTables:
		p.initializationOption = true
		o.UnloggedTables = true
	case oTablespace:
		p.initializationOption = true
		o.Tablespace = arg
	case oIndexTablespace:
		p.initializationOption = true
		o.IndexTablespace = arg
	case oSamplingRate:
		p.benchmarkingOption = true
		r := atof(arg)
		if !(r > 0) || r > 1 {
			// NaN passes pgbench's test (and then logs everything).
			return p.fatal("invalid sampling rate: \"%s\"", arg)
		}
		o.SamplingRate = r
	case oAggregateInterval:
		p.benchmarkingOption = true
		o.AggregateInterval, err = p.intOption(arg, "--aggregate-interval", 1, math.MaxInt32)
	case oProgressTimestamp:
		o.ProgressTimestamp = true
		p.benchmarkingOption = true
	case oLogPrefix:
		p.benchmarkingOption = true
		o.LogPrefix = arg
		p.logPrefixSet = true
	case oForeignKeys:
		p.initializationOption = true
		o.ForeignKeys = true
	case oRandomSeed:
		p.benchmarkingOption = true
		if err := p.setRandomSeed(arg, true); err != nil {
			err.Lines = append(err.Lines, p.prog+": error: error while setting random seed from --random-seed option")
			return err
		}
	case oShowScript:
		b, err := p.findBuiltin(arg)
		if err != nil {
			return err
		}
		text, terr := script.BuiltinText(b)
		if terr != nil {
			return p.fatal("%s", terr.Error())
		}
		o.Mode = ShowScript
		o.Output = fmt.Sprintf("-- %s: %s\n%s\n", b, builtinTitle(b), text)
	case oPartitions:
		p.initializationOption = true
		o.Partitions, err = p.intOption(arg, "--partitions", 0, math.MaxInt32)
	case oPartitionMethod:
		p.initializationOption = true
		switch strings.ToLower(arg) {
		case "range":
			o.PartitionMethod = "range"
		case "hash":
			o.PartitionMethod = "hash"
		default:
			return p.fatal("invalid partition method, expecting \"range\" or \"hash\", got: \"%s\"", arg)
		}
		p.partitionMethodSet = true
	case oFailuresDetailed:
		p.benchmarkingOption = true
		o.FailuresDetailed = true
	case oMaxTries:
		n := atoi(arg)
		if n < 0 {
			return p.fatal("invalid number of maximum tries: \"%s\"", arg)
		}
		p.benchmarkingOption = true
		o.MaxTries = uint32(n)
	case oVerboseErrors:
		p.benchmarkingOption = true
		o.VerboseErrors = true
	case oExitOnAbort:
		p.benchmarkingOption = true
		o.ExitOnAbort = true
	}
	return err
}

// finish is what pgbench's main() does after its getopt loop.
func (p *parser) finish(operands []string) error {
	o := p.o
	if len(o.Scripts) == 0 && o.Mode != Init {
		if err := p.addBuiltin("tpcb-like", 1); err != nil {
			return err
		}
		p.benchmarkingOption = true
	}
	total := 0
	for _, s := range o.Scripts {
		// pgbench's postprocess_sql_command: a prepared or extended
		// statement takes at most MaxParams parameters.
		for _, c := range s.Parsed.Commands {
			if c.Kind == script.SQL && o.Protocol != script.Simple && len(c.Params) > MaxParams {
				return p.fatal("statement has too many arguments (maximum is %d): %s", MaxParams, c.Text)
			}
		}
		total += s.Weight
	}
	if total == 0 && o.Mode != Init {
		return p.fatal("total script weight must not be zero")
	}
	o.Threads = min(o.Jobs, o.Clients)
	if o.DBName == "" && len(operands) > 0 {
		o.DBName, operands = operands[0], operands[1:]
	}
	if len(operands) > 0 {
		return &Error{Lines: []string{
			fmt.Sprintf("%s: error: too many command-line arguments (first is \"%s\")", p.prog, operands[0]),
			p.hint(),
		}}
	}
	if o.Mode == Init {
		if p.benchmarkingOption {
			return p.fatal("some of the specified options cannot be used in initialization (-i) mode")
		}
		if o.Partitions == 0 && p.partitionMethodSet {
			return p.fatal("--partition-method requires greater than zero --partitions")
		}
		if o.Partitions > 0 && o.PartitionMethod == "" {
			o.PartitionMethod = "range"
		}
		steps := DefaultInitSteps
		if p.initSteps != nil {
			steps = *p.initSteps
		}
		if o.NoVacuum {
			steps = strings.ReplaceAll(steps, "v", " ")
		}
		if o.ForeignKeys && !strings.Contains(steps, "f") {
			steps += "f"
		}
		o.InitSteps = steps
		return nil
	}
	if p.initializationOption {
		return p.fatal("some of the specified options cannot be used in benchmarking mode")
	}
	// In benchmarking mode pgbench keeps these at their defaults.
	o.PartitionMethod = ""
	switch {
	case o.Transactions > 0 && o.Duration > 0:
		return p.fatal("specify either a number of transactions (-t) or a duration (-T), not both")
	case o.Transactions <= 0 && o.Duration <= 0:
		o.Transactions = DefaultTransactions
	}
	switch {
	case o.SamplingRate > 0 && !o.Log:
		return p.fatal("log sampling (--sampling-rate) is allowed only when logging transactions (-l)")
	case o.SamplingRate > 0 && o.AggregateInterval > 0:
		return p.fatal("log sampling (--sampling-rate) and aggregation (--aggregate-interval) cannot be used at the same time")
	case o.AggregateInterval > 0 && !o.Log:
		return p.fatal("log aggregation is allowed only when actually logging transactions")
	case !o.Log && p.logPrefixSet:
		return p.fatal("log file prefix (--log-prefix) is allowed only when logging transactions (-l)")
	case o.Duration > 0 && o.AggregateInterval > o.Duration:
		return p.fatal("number of seconds for aggregation (%d) must not be higher than test duration (%d)", o.AggregateInterval, o.Duration)
	case o.Duration > 0 && o.AggregateInterval > 0 && o.Duration%o.AggregateInterval != 0:
		return p.fatal("duration (%d) must be a multiple of aggregation interval (%d)", o.Duration, o.AggregateInterval)
	case o.ProgressTimestamp && o.Progress == 0:
		return p.fatal("--progress-timestamp is allowed only under --progress")
	case o.MaxTries == 0 && o.LatencyLimitUS == 0 && o.Duration <= 0:
		return p.fatal("an unlimited number of transaction tries can only be used with --latency-limit or a duration (-T)")
	}
	return nil
}

// builtinNames are pgbench's builtin scripts, in its order.
func builtinNames() []string { return strings.Split(script.BuiltinNames(), ", ") }

// builtinTitle is a builtin's description: "<builtin: select only>".
func builtinTitle(name string) string {
	s, err := script.Builtin(name)
	if err != nil {
		return ""
	}
	return s.Title
}

// listBuiltins is pgbench's listAvailableScripts, blank line included.
func listBuiltins() string { return script.ListBuiltins() + "\n" }

// findBuiltin is pgbench's findBuiltin: name is a prefix of exactly one
// builtin's name; otherwise the error lists them.
func (p *parser) findBuiltin(name string) (string, error) {
	var found []string
	for _, b := range builtinNames() {
		if strings.HasPrefix(b, name) {
			found = append(found, b)
		}
	}
	if len(found) == 1 {
		return found[0], nil
	}
	msg := fmt.Sprintf("no builtin script found for name \"%s\"", name)
	if len(found) > 1 {
		msg = fmt.Sprintf("ambiguous builtin name: %d builtin scripts found for prefix \"%s\"", len(found), name)
	}
	lines := []string{p.prog + ": error: " + msg}
	lines = append(lines, strings.Split(strings.TrimSuffix(listBuiltins(), "\n"), "\n")...)
	return "", &Error{Lines: lines}
}

func (p *parser) addBuiltin(name string, weight int) error {
	b, err := p.findBuiltin(name)
	if err != nil {
		return err
	}
	s, serr := script.Builtin(b)
	if serr != nil {
		return p.fatal("%s", serr.Error())
	}
	s.Weight = weight
	if err := p.addScript(Script{Builtin: b, Weight: weight, Parsed: s}); err != nil {
		return err
	}
	p.o.BuiltinUsed = true
	return nil
}

func (p *parser) addFile(path string, weight int) error {
	var src []byte
	var err error
	if path == "-" {
		if p.cfg.Stdin == nil {
			src = nil
		} else {
			src, err = io.ReadAll(p.cfg.Stdin)
		}
	} else {
		src, err = p.cfg.ReadFile(path)
	}
	if err != nil {
		return p.fatal("could not open file \"%s\": %s", path, strerror(err))
	}
	s, perr := script.ParseAs(path, string(src), p.o.Major)
	if perr != nil {
		var se *script.Error
		if errors.As(perr, &se) {
			return &Error{Lines: strings.Split(strings.TrimSuffix(se.Pgbench(p.prog), "\n"), "\n")}
		}
		return p.fatal("%s", perr.Error())
	}
	s.Weight = weight
	return p.addScript(Script{File: path, Weight: weight, Parsed: s})
}

func (p *parser) addScript(s Script) error {
	if len(p.o.Scripts) >= MaxScripts {
		return p.fatal("at most %d SQL scripts are allowed", MaxScripts)
	}
	p.o.Scripts = append(p.o.Scripts, s)
	return nil
}

// strerror is C's text for err's errno: "No such file or directory".
func strerror(err error) string {
	var errno syscall.Errno
	msg := err.Error()
	if errors.As(err, &errno) {
		msg = errno.Error()
	}
	if msg == "" {
		return msg
	}
	return strings.ToUpper(msg[:1]) + msg[1:]
}
