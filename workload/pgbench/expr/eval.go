package expr

import (
	"errors"
	"fmt"
	"math"
)

// The node types. Every Eval returns its Value by value and allocates
// nothing unless it fails (or debug() prints).

type constNode struct{ v Value }

func (n *constNode) Eval(*Env) (Value, error) { return n.v, nil }

type varNode struct{ name string }

func (n *varNode) Eval(env *Env) (Value, error) {
	if env == nil || env.Lookup == nil {
		return Value{}, undefinedVariable(n.name)
	}
	v, ok := env.Lookup(n.name)
	if !ok {
		return Value{}, undefinedVariable(n.name)
	}
	return Resolve(n.name, v)
}

func undefinedVariable(name string) error {
	return fmt.Errorf("undefined variable %q", name)
}

// defaultSeedNode stands for the omitted seed of hash functions and
// permute. pgbench reads the variable :default_seed there; so does this,
// falling back to Env.DefaultSeed when no such variable is set.
type defaultSeedNode struct{}

func (defaultSeedNode) Eval(env *Env) (Value, error) {
	if env == nil {
		return Value{Kind: Int}, nil
	}
	if env.Lookup != nil {
		if v, ok := env.Lookup("default_seed"); ok {
			return Resolve("default_seed", v)
		}
	}
	return Value{Kind: Int, I: env.DefaultSeed}, nil
}

// arithNode is + - * / % = <> < <= (> and >= are < and <= with swapped
// operands, as in pgbench). The binary nodes each evaluate their operands
// inline: a shared helper returning both values measured 60% slower here.
type arithNode struct {
	op   funcID
	l, r Node
}

func (n *arithNode) Eval(env *Env) (Value, error) {
	a, err := n.l.Eval(env)
	if err != nil {
		return Value{}, err
	}
	b, err := n.r.Eval(env)
	if err != nil {
		return Value{}, err
	}
	if a.Kind == Int && b.Kind == Int {
		return arithInt(n.op, a.I, b.I)
	}
	if a.Kind == Null || b.Kind == Null {
		return Value{}, nil
	}
	return arith(n.op, &a, &b)
}

var errDivByZero = errors.New("division by zero")

func arith(op funcID, a, b *Value) (Value, error) {
	if a.Kind == Int && b.Kind == Int {
		return arithInt(op, a.I, b.I)
	}
	if (a.Kind == Double || b.Kind == Double) && op != fMod {
		ld, err := coerceToDouble(*a)
		if err != nil {
			return Value{}, err
		}
		rd, err := coerceToDouble(*b)
		if err != nil {
			return Value{}, err
		}
		switch op {
		case fAdd:
			return Value{Kind: Double, F: ld + rd}, nil
		case fSub:
			return Value{Kind: Double, F: ld - rd}, nil
		case fMul:
			return Value{Kind: Double, F: ld * rd}, nil
		case fDiv:
			return Value{Kind: Double, F: ld / rd}, nil
		case fEq:
			return Value{Kind: Bool, B: ld == rd}, nil
		case fNE:
			return Value{Kind: Bool, B: ld != rd}, nil
		case fLE:
			return Value{Kind: Bool, B: ld <= rd}, nil
		case fLT:
			return Value{Kind: Bool, B: ld < rd}, nil
		}
		panic("expr: bad arithmetic operator")
	}
	li, err := coerceToInt(*a)
	if err != nil {
		return Value{}, err
	}
	ri, err := coerceToInt(*b)
	if err != nil {
		return Value{}, err
	}
	return arithInt(op, li, ri)
}

func arithInt(op funcID, li, ri int64) (Value, error) {
	switch op {
	case fAdd:
		r := li + ri
		if (r > li) != (ri > 0) {
			return Value{}, errors.New("bigint add out of range")
		}
		return Value{Kind: Int, I: r}, nil
	case fSub:
		r := li - ri
		if (r < li) != (ri > 0) {
			return Value{}, errors.New("bigint sub out of range")
		}
		return Value{Kind: Int, I: r}, nil
	case fMul:
		r, ok := mul64(li, ri)
		if !ok {
			return Value{}, errors.New("bigint mul out of range")
		}
		return Value{Kind: Int, I: r}, nil
	case fEq:
		return Value{Kind: Bool, B: li == ri}, nil
	case fNE:
		return Value{Kind: Bool, B: li != ri}, nil
	case fLE:
		return Value{Kind: Bool, B: li <= ri}, nil
	case fLT:
		return Value{Kind: Bool, B: li < ri}, nil
	case fDiv, fMod:
		if ri == 0 {
			return Value{}, errDivByZero
		}
		if ri == -1 {
			if op == fMod {
				return Value{Kind: Int}, nil
			}
			if li == math.MinInt64 {
				return Value{}, errors.New("bigint div out of range")
			}
			return Value{Kind: Int, I: -li}, nil
		}
		if op == fDiv {
			return Value{Kind: Int, I: li / ri}, nil
		}
		return Value{Kind: Int, I: li % ri}, nil
	}
	panic("expr: bad arithmetic operator")
}

// mul64 multiplies with overflow detection.
func mul64(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	r := a * b
	if (r < 0) != ((a < 0) != (b < 0)) || r/b != a {
		return r, false
	}
	return r, true
}

// bitNode is & | # << >>; the shift count is taken modulo 64, as the x86-64
// shift instructions pgbench compiles to do (1 << 64 is 1 there).
type bitNode struct {
	op   funcID
	l, r Node
}

func (n *bitNode) Eval(env *Env) (Value, error) {
	a, err := n.l.Eval(env)
	if err != nil {
		return Value{}, err
	}
	b, err := n.r.Eval(env)
	if err != nil {
		return Value{}, err
	}
	if a.Kind == Int && b.Kind == Int {
		return Value{Kind: Int, I: bitop(n.op, a.I, b.I)}, nil
	}
	if a.Kind == Null || b.Kind == Null {
		return Value{}, nil
	}
	li, err := coerceToInt(a)
	if err != nil {
		return Value{}, err
	}
	ri, err := coerceToInt(b)
	if err != nil {
		return Value{}, err
	}
	return Value{Kind: Int, I: bitop(n.op, li, ri)}, nil
}

func bitop(op funcID, li, ri int64) int64 {
	switch op {
	case fBitAnd:
		return li & ri
	case fBitOr:
		return li | ri
	case fBitXor:
		return li ^ ri
	case fLShift:
		return li << (uint64(ri) & 63)
	case fRShift:
		return li >> (uint64(ri) & 63)
	}
	panic("expr: bad bitwise operator")
}

// notNode is NOT: NULL stays NULL, anything but a boolean is an error.
type notNode struct{ x Node }

func (n *notNode) Eval(env *Env) (Value, error) {
	v, err := n.x.Eval(env)
	if err != nil {
		return Value{}, err
	}
	if v.Kind == Null {
		return Value{}, nil
	}
	b, err := coerceToBool(v)
	if err != nil {
		return Value{}, err
	}
	return Value{Kind: Bool, B: !b}, nil
}

// isNode is x IS NULL / IS TRUE / IS FALSE: true when x has the same type
// and, for booleans, the same value (never NULL itself).
type isNode struct {
	x    Node
	want Value
}

func (n *isNode) Eval(env *Env) (Value, error) {
	v, err := n.x.Eval(env)
	if err != nil {
		return Value{}, err
	}
	return Value{Kind: Bool, B: v.Kind == n.want.Kind && (v.Kind != Bool || v.B == n.want.B)}, nil
}

// andNode and orNode evaluate lazily like pgbench's evalLazyFunc: a NULL
// left operand gives NULL at once (so NULL AND false is NULL, unlike SQL),
// a decisive left operand skips the right one, and non-boolean operands are
// errors.
type andNode struct{ l, r Node }

func (n *andNode) Eval(env *Env) (Value, error) {
	a, err := n.l.Eval(env)
	if err != nil {
		return Value{}, err
	}
	if a.Kind == Null {
		return Value{}, nil
	}
	ba, err := coerceToBool(a)
	if err != nil {
		return Value{}, err
	}
	if !ba {
		return Value{Kind: Bool, B: false}, nil
	}
	return lazyRight(n.r, env)
}

type orNode struct{ l, r Node }

func (n *orNode) Eval(env *Env) (Value, error) {
	a, err := n.l.Eval(env)
	if err != nil {
		return Value{}, err
	}
	if a.Kind == Null {
		return Value{}, nil
	}
	ba, err := coerceToBool(a)
	if err != nil {
		return Value{}, err
	}
	if ba {
		return Value{Kind: Bool, B: true}, nil
	}
	return lazyRight(n.r, env)
}

func lazyRight(r Node, env *Env) (Value, error) {
	b, err := r.Eval(env)
	if err != nil {
		return Value{}, err
	}
	if b.Kind == Null {
		return Value{}, nil
	}
	bb, err := coerceToBool(b)
	if err != nil {
		return Value{}, err
	}
	return Value{Kind: Bool, B: bb}, nil
}

// caseNode is CASE WHEN ... THEN ... [ELSE ...] END; a condition holds when
// Truth says so (NULL and zero are false). A missing ELSE is NULL.
type caseNode struct {
	conds, vals []Node
	els         Node
}

func (n *caseNode) Eval(env *Env) (Value, error) {
	for i, c := range n.conds {
		v, err := c.Eval(env)
		if err != nil {
			return Value{}, err
		}
		if v.Truth() {
			return n.vals[i].Eval(env)
		}
	}
	return n.els.Eval(env)
}

// Truth is pgbench's valueTruth, used by \if and CASE: NULL is false,
// booleans are themselves, numbers are true when non-zero. A string is
// converted first (see Resolve); one that does not convert is false.
func (v Value) Truth() bool {
	switch v.Kind {
	case Bool:
		return v.B
	case Int:
		return v.I != 0
	case Double:
		return v.F != 0
	case Str:
		r, err := Resolve("", v)
		if err != nil || r.Kind == Str {
			return false
		}
		return r.Truth()
	}
	return false
}

func typeName(v Value) string {
	switch v.Kind {
	case Null:
		return "null"
	case Bool:
		return "boolean"
	case Int:
		return "int"
	case Double:
		return "double"
	case Str:
		return "string"
	}
	return "none"
}

func coerceToBool(v Value) (bool, error) {
	if v.Kind == Bool {
		return v.B, nil
	}
	return false, fmt.Errorf("cannot coerce %s to boolean", typeName(v))
}

// coerceToInt is pgbench's: doubles round half to even and must fit.
func coerceToInt(v Value) (int64, error) {
	switch v.Kind {
	case Int:
		return v.I, nil
	case Double:
		d := math.RoundToEven(v.F)
		// FLOAT8_FITS_IN_INT64: -2^63 <= d < 2^63
		if math.IsNaN(d) || !(d >= -9223372036854775808.0 && d < 9223372036854775808.0) {
			return 0, fmt.Errorf("double to int overflow for %s", cfmtF(d))
		}
		return int64(d), nil
	}
	return 0, fmt.Errorf("cannot coerce %s to int", typeName(v))
}

func coerceToDouble(v Value) (float64, error) {
	switch v.Kind {
	case Double:
		return v.F, nil
	case Int:
		return float64(v.I), nil
	}
	return 0, fmt.Errorf("cannot coerce %s to double", typeName(v))
}

// cfmtF prints like pgbench's "%f" (PostgreSQL's snprintf).
func cfmtF(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return fmt.Sprintf("%f", f)
}
