package cli

import (
	"errors"
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
	if outOfRange {
		// The type's own limit (2^63-1) is not the flag's: say only
		// which way it is out.
		if strings.HasPrefix(v, "-") {
			return usagef("%s: %s is too small a number", name, v)
		}
		return usagef("%s: %s is too large a number", name, v)
	}
	var takes string
	switch t := f.Value.Type(); {
	case strings.HasPrefix(t, "uint"):
		takes = "a whole number, 0 or more, in digits"
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
