package expr

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// maxFuncArgs is pgbench's MAX_FARGS: a call with more arguments fails at
// evaluation, after its first 16 arguments were evaluated.
const maxFuncArgs = 16

// funcNode is a call of a built-in function (the operators have nodes of
// their own). All arguments are evaluated, in order; any NULL argument
// makes the result NULL, except for debug().
type funcNode struct {
	fn   funcID
	args []Node
}

func newFuncNode(fn funcID, args []Node) Node {
	return &funcNode{fn: fn, args: args}
}

func (n *funcNode) Eval(env *Env) (Value, error) {
	// a small buffer for the usual calls: zeroing room for 16 values on
	// every call shows in profiles
	if len(n.args) <= 4 {
		var buf [4]Value
		return n.eval(env, buf[:0])
	}
	var buf [maxFuncArgs]Value
	return n.eval(env, buf[:0])
}

// eval evaluates the arguments into args (which has room for them, up to
// maxFuncArgs) and applies the function.
func (n *funcNode) eval(env *Env, args []Value) (Value, error) {
	hasNull := false
	for _, a := range n.args {
		if len(args) == maxFuncArgs {
			return Value{}, fmt.Errorf("too many function arguments, maximum is %d", maxFuncArgs)
		}
		v, err := a.Eval(env)
		if err != nil {
			return Value{}, err
		}
		hasNull = hasNull || v.Kind == Null
		args = append(args, v)
	}
	if hasNull && n.fn != fDebug {
		return Value{}, nil
	}
	return callFunc(env, n.fn, args)
}

func callFunc(env *Env, fn funcID, args []Value) (Value, error) {
	switch fn {
	case fMod:
		return arith(fMod, &args[0], &args[1])

	case fPi:
		return Value{Kind: Double, F: math.Pi}, nil

	case fAbs:
		v := args[0]
		switch v.Kind {
		case Int:
			// -MinInt64 wraps to itself, as in pgbench
			if v.I < 0 {
				return Value{Kind: Int, I: -v.I}, nil
			}
			return v, nil
		case Double:
			if v.F < 0 {
				return Value{Kind: Double, F: -v.F}, nil
			}
			return v, nil
		case Bool:
			// pgbench reads the double member of its value union here:
			// the bytes of the boolean, i.e. the smallest denormal for true.
			if v.B {
				return Value{Kind: Double, F: math.Float64frombits(1)}, nil
			}
			return Value{Kind: Double}, nil
		}
		_, err := coerceToDouble(v)
		return Value{}, err

	case fDebug:
		v := args[0]
		if env != nil && env.Debug != nil {
			writeDebug(env.Debug, env.Script, env.Command, v)
		}
		return v, nil

	case fDouble, fSqrt, fLn, fExp:
		d, err := coerceToDouble(args[0])
		if err != nil {
			return Value{}, err
		}
		switch fn {
		case fSqrt:
			d = math.Sqrt(d)
		case fLn:
			d = math.Log(d)
		case fExp:
			d = math.Exp(d)
		}
		return Value{Kind: Double, F: d}, nil

	case fInt:
		i, err := coerceToInt(args[0])
		if err != nil {
			return Value{}, err
		}
		return Value{Kind: Int, I: i}, nil

	case fLeast, fGreatest:
		return extremum(fn, args)

	case fRandom, fRandomGaussian, fRandomExponential, fRandomZipfian:
		return randomFunc(env, fn, args)

	case fPow:
		l, err := coerceToDouble(args[0])
		if err != nil {
			return Value{}, err
		}
		r, err := coerceToDouble(args[1])
		if err != nil {
			return Value{}, err
		}
		return Value{Kind: Double, F: math.Pow(l, r)}, nil

	case fHashMurmur2, fHashFnv1a:
		val, err := coerceToInt(args[0])
		if err != nil {
			return Value{}, err
		}
		seed, err := coerceToInt(args[1])
		if err != nil {
			return Value{}, err
		}
		if fn == fHashMurmur2 {
			return Value{Kind: Int, I: HashMurmur2(val, seed)}, nil
		}
		return Value{Kind: Int, I: HashFNV1a(val, seed)}, nil

	case fPermute:
		val, err := coerceToInt(args[0])
		if err != nil {
			return Value{}, err
		}
		size, err := coerceToInt(args[1])
		if err != nil {
			return Value{}, err
		}
		seed, err := coerceToInt(args[2])
		if err != nil {
			return Value{}, err
		}
		if size <= 0 {
			return Value{}, errors.New("permute size parameter must be greater than zero")
		}
		return Value{Kind: Int, I: Permute(val, size, seed)}, nil
	}
	panic("expr: unknown function")
}

// extremum is least() and greatest(): double if any argument is one, else
// int, with pgbench's Min/Max macros (so a NaN argument wins when it comes
// second in a comparison).
func extremum(fn funcID, args []Value) (Value, error) {
	haveDouble := false
	for _, a := range args {
		if a.Kind == Double {
			haveDouble = true
			break
		}
	}
	if haveDouble {
		ext, err := coerceToDouble(args[0])
		if err != nil {
			return Value{}, err
		}
		for _, a := range args[1:] {
			d, err := coerceToDouble(a)
			if err != nil {
				return Value{}, err
			}
			if fn == fLeast {
				if !(ext < d) {
					ext = d
				}
			} else if !(ext > d) {
				ext = d
			}
		}
		return Value{Kind: Double, F: ext}, nil
	}
	ext, err := coerceToInt(args[0])
	if err != nil {
		return Value{}, err
	}
	for _, a := range args[1:] {
		i, err := coerceToInt(a)
		if err != nil {
			return Value{}, err
		}
		if fn == fLeast {
			ext = min(ext, i)
		} else {
			ext = max(ext, i)
		}
	}
	return Value{Kind: Int, I: ext}, nil
}

// writeDebug prints one line, in a single Write, as pgbench 13 and later
// print it: "debug(script=0,command=1): int 5".
func writeDebug(w io.Writer, script, command int, v Value) {
	b := make([]byte, 0, 64)
	b = append(b, "debug(script="...)
	b = strconv.AppendInt(b, int64(script), 10)
	b = append(b, ",command="...)
	b = strconv.AppendInt(b, int64(command), 10)
	b = append(b, "): "...)
	switch v.Kind {
	case Null:
		b = append(b, "null"...)
	case Bool:
		b = append(b, "boolean "...)
		b = strconv.AppendBool(b, v.B)
	case Int:
		b = append(b, "int "...)
		b = strconv.AppendInt(b, v.I, 10)
	case Double:
		b = append(b, "double "...)
		b = appendDouble(b, v.F)
	default:
		b = append(b, "string "...)
		b = append(b, v.S...)
	}
	b = append(b, '\n')
	_, _ = w.Write(b)
}
