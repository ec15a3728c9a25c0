package cli

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// flagError words a value the flag parser refused as the rest of txload's
// refusals are worded: the flag, the value, and what the flag takes (pflag
// says `invalid argument "1e99" for "--keys" flag: strconv.ParseInt:
// parsing "1e99": invalid syntax`). Other errors (an unknown flag, a
// missing value) are pflag's.
func flagError(err error) error {
	var iv *pflag.InvalidValueError
	if !errors.As(err, &iv) {
		return usageErr(err)
	}
	f, v := iv.GetFlag(), iv.GetValue()
	name := "--" + f.Name
	var ne *strconv.NumError
	outOfRange := errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange)
	var takes string
	switch t := f.Value.Type(); {
	case strings.HasPrefix(t, "uint") && outOfRange:
		takes = fmt.Sprintf("a whole number, at most %d", uint64(math.MaxUint64)>>(64-bitsOf(t)))
	case strings.HasPrefix(t, "uint"):
		takes = "a whole number, 0 or more, in digits"
	case strings.HasPrefix(t, "int") && outOfRange && strings.HasPrefix(v, "-"):
		takes = fmt.Sprintf("a whole number, at least %d", int64(math.MinInt64)>>(64-bitsOf(t)))
	case strings.HasPrefix(t, "int") && outOfRange:
		takes = fmt.Sprintf("a whole number, at most %d", int64(math.MaxInt64)>>(64-bitsOf(t)))
	case strings.HasPrefix(t, "int"):
		takes = "a whole number, in digits (1000000, not 1e6)"
	case strings.HasPrefix(t, "float"):
		takes = "a number"
	case t == "duration":
		takes = "a duration such as 500ms, 30s, 5m or 1h30m, at most 2562047h"
	case t == "bool":
		takes = "true or false"
	default:
		return usagef("%s: %q: %v", name, v, iv.Unwrap())
	}
	return usagef("%s takes %s, not %q", name, takes, v)
}

// bitsOf is the width of an integer flag type ("int32": 32; "int": 64).
func bitsOf(t string) uint {
	t = strings.TrimPrefix(strings.TrimPrefix(t, "u"), "int")
	if n, err := strconv.Atoi(t); err == nil && n > 0 && n <= 64 {
		return uint(n)
	}
	return strconv.IntSize
}
