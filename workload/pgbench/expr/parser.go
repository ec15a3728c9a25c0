package expr

import (
	"fmt"
	"math"
)

// Precedence levels, lowest to highest, as in exprparse.y:
//
//	%left     OR
//	%left     AND
//	%right    NOT
//	%nonassoc IS ISNULL NOTNULL
//	%nonassoc < > = <= >= <>
//	%left     | # & << >> ~
//	%left     + -
//	%left     * / %
//	%right    UNARY
const (
	precOr    = 1
	precAnd   = 2
	precNot   = 3
	precIs    = 4
	precCmp   = 5
	precBit   = 6
	precAdd   = 7
	precMul   = 8
	precUnary = 9
)

// maxDepth bounds nesting so that a hostile expression cannot exhaust the
// stack (bison's own parser stack stops at 10000 entries).
const maxDepth = 1000

// funcID names a built-in function or operator.
type funcID uint8

const (
	fAdd funcID = iota
	fSub
	fMul
	fDiv
	fMod
	fEq
	fNE
	fLE
	fLT
	fBitAnd
	fBitOr
	fBitXor
	fLShift
	fRShift
	fAbs
	fLeast
	fGreatest
	fDebug
	fPi
	fSqrt
	fLn
	fExp
	fInt
	fDouble
	fRandom
	fRandomGaussian
	fRandomExponential
	fRandomZipfian
	fPow
	fHashMurmur2
	fHashFnv1a
	fPermute
)

// Argument-count classes (PGBENCH_NARGS_* in exprparse.y).
const (
	nargsVariable = -1 // at least one
	nargsHash     = -3 // one, or two with a seed
	nargsPermute  = -4 // two, or three with a seed
)

type funcDef struct {
	name  string
	nargs int
	id    funcID
}

// functions are the names callable as NAME(...), matched without regard to
// ASCII case like pgbench's find_func.
var functions = map[string]funcDef{
	"mod":                {"mod", 2, fMod},
	"abs":                {"abs", 1, fAbs},
	"least":              {"least", nargsVariable, fLeast},
	"greatest":           {"greatest", nargsVariable, fGreatest},
	"debug":              {"debug", 1, fDebug},
	"pi":                 {"pi", 0, fPi},
	"sqrt":               {"sqrt", 1, fSqrt},
	"ln":                 {"ln", 1, fLn},
	"exp":                {"exp", 1, fExp},
	"int":                {"int", 1, fInt},
	"double":             {"double", 1, fDouble},
	"random":             {"random", 2, fRandom},
	"random_gaussian":    {"random_gaussian", 3, fRandomGaussian},
	"random_exponential": {"random_exponential", 3, fRandomExponential},
	"random_zipfian":     {"random_zipfian", 3, fRandomZipfian},
	"pow":                {"pow", 2, fPow},
	"power":              {"power", 2, fPow},
	"hash":               {"hash", nargsHash, fHashMurmur2},
	"hash_murmur2":       {"hash_murmur2", nargsHash, fHashMurmur2},
	"hash_fnv1a":         {"hash_fnv1a", nargsHash, fHashFnv1a},
	"permute":            {"permute", nargsPermute, fPermute},
}

type parser struct {
	toks  []token
	pos   int
	depth int
}

func parse(src string) (Node, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	n, err := p.expr(0)
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, p.unexpected(t)
	}
	return n, nil
}

func (p *parser) peek() token { return p.toks[p.pos] }

func (p *parser) next() token {
	t := p.toks[p.pos]
	if t.kind != tEOF {
		p.pos++
	}
	return t
}

func (p *parser) unexpected(t token) error {
	if t.kind == tEOF {
		return &SyntaxError{Msg: "syntax error", Detail: "unexpected end of expression", Pos: t.pos, End: t.pos}
	}
	return &SyntaxError{Msg: "syntax error", Detail: fmt.Sprintf("unexpected %q", t.text), Pos: t.pos, End: t.pos + len(t.text)}
}

func (p *parser) expect(k tokKind) (token, error) {
	t := p.peek()
	if t.kind != k {
		return t, p.unexpected(t)
	}
	return p.next(), nil
}

// binaryPrec returns the precedence of a binary operator token, 0 if t is
// not one.
func binaryPrec(k tokKind) int {
	switch k {
	case tOr:
		return precOr
	case tAnd:
		return precAnd
	case tLT, tGT, tEq, tLE, tGE, tNE:
		return precCmp
	case tBitOr, tHash, tBitAnd, tLShift, tRShift:
		return precBit
	case tPlus, tMinus:
		return precAdd
	case tStar, tSlash, tPercent:
		return precMul
	}
	return 0
}

// expr parses an expression whose operators all bind at least as tightly as
// minPrec. It reproduces the shift/reduce decisions bison makes from the
// precedence declarations: left-associative operators reduce on an equal
// precedence, non-associative ones are a syntax error, and a prefix
// operator takes as operand everything binding more tightly than itself.
func (p *parser) expr(minPrec int) (Node, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		t := p.peek()
		return nil, &SyntaxError{Msg: "expression is too deeply nested", Pos: t.pos, End: t.pos + len(t.text)}
	}
	lhs, err := p.prefix()
	if err != nil {
		return nil, err
	}
	lastNonassoc := 0
	for {
		t := p.peek()
		switch t.kind {
		case tIsNull, tNotNull, tIs:
			if precIs < minPrec {
				return lhs, nil
			}
			p.next()
			lhs, err = p.postfixIs(t, lhs)
			if err != nil {
				return nil, err
			}
			lastNonassoc = 0
			continue
		}
		prec := binaryPrec(t.kind)
		if prec == 0 || prec < minPrec {
			return lhs, nil
		}
		if prec == precCmp && lastNonassoc == precCmp {
			return nil, p.unexpected(t)
		}
		p.next()
		rhs, err := p.expr(prec + 1)
		if err != nil {
			return nil, err
		}
		lhs = makeBinary(t.kind, lhs, rhs)
		if prec == precCmp {
			lastNonassoc = precCmp
		} else {
			lastNonassoc = 0
		}
	}
}

// postfixIs parses what follows IS, ISNULL or NOTNULL.
func (p *parser) postfixIs(t token, lhs Node) (Node, error) {
	switch t.kind {
	case tIsNull:
		return &isNode{x: lhs, want: Value{}}, nil
	case tNotNull:
		return &notNode{x: &isNode{x: lhs, want: Value{}}}, nil
	}
	negate := false
	if p.peek().kind == tNot {
		p.next()
		negate = true
	}
	var want Value
	switch u := p.peek(); u.kind {
	case tNull:
		want = Value{}
	case tBool:
		want = Value{Kind: Bool, B: u.b}
	default:
		return nil, p.unexpected(u)
	}
	p.next()
	var n Node = &isNode{x: lhs, want: want}
	if negate {
		n = &notNode{x: n}
	}
	return n, nil
}

func makeBinary(k tokKind, l, r Node) Node {
	switch k {
	case tOr:
		return &orNode{l: l, r: r}
	case tAnd:
		return &andNode{l: l, r: r}
	case tPlus:
		return &arithNode{op: fAdd, l: l, r: r}
	case tMinus:
		return &arithNode{op: fSub, l: l, r: r}
	case tStar:
		return &arithNode{op: fMul, l: l, r: r}
	case tSlash:
		return &arithNode{op: fDiv, l: l, r: r}
	case tPercent:
		return &arithNode{op: fMod, l: l, r: r}
	case tEq:
		return &arithNode{op: fEq, l: l, r: r}
	case tNE:
		return &arithNode{op: fNE, l: l, r: r}
	case tLT:
		return &arithNode{op: fLT, l: l, r: r}
	case tLE:
		return &arithNode{op: fLE, l: l, r: r}
	// a > b is <(b, a) and a >= b is <=(b, a) in pgbench, which therefore
	// evaluates b first.
	case tGT:
		return &arithNode{op: fLT, l: r, r: l}
	case tGE:
		return &arithNode{op: fLE, l: r, r: l}
	case tBitAnd:
		return &bitNode{op: fBitAnd, l: l, r: r}
	case tBitOr:
		return &bitNode{op: fBitOr, l: l, r: r}
	case tHash:
		return &bitNode{op: fBitXor, l: l, r: r}
	case tLShift:
		return &bitNode{op: fLShift, l: l, r: r}
	case tRShift:
		return &bitNode{op: fRShift, l: l, r: r}
	}
	panic("expr: unknown binary operator")
}

// prefix parses a primary expression or one led by a prefix operator.
func (p *parser) prefix() (Node, error) {
	t := p.next()
	switch t.kind {
	case tLParen:
		n, err := p.expr(0)
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tRParen); err != nil {
			return nil, err
		}
		return n, nil
	case tPlus:
		// unary plus is the operand itself, whatever its type
		return p.expr(precUnary)
	case tMinus:
		if p.peek().kind == tMaxIntPlusOne {
			p.next()
			return &constNode{v: Value{Kind: Int, I: math.MinInt64}}, nil
		}
		x, err := p.expr(precUnary)
		if err != nil {
			return nil, err
		}
		// pgbench: -x is 0 - x
		return &arithNode{op: fSub, l: &constNode{v: Value{Kind: Int}}, r: x}, nil
	case tTilde:
		// '~' has the precedence of the bitwise operators (no %prec UNARY)
		x, err := p.expr(precBit + 1)
		if err != nil {
			return nil, err
		}
		// pgbench: ~x is (~0) # x
		return &bitNode{op: fBitXor, l: &constNode{v: Value{Kind: Int, I: -1}}, r: x}, nil
	case tNot:
		x, err := p.expr(precNot + 1)
		if err != nil {
			return nil, err
		}
		return &notNode{x: x}, nil
	case tNull:
		return &constNode{v: Value{}}, nil
	case tBool:
		return &constNode{v: Value{Kind: Bool, B: t.b}}, nil
	case tInt:
		return &constNode{v: Value{Kind: Int, I: t.i}}, nil
	case tDouble:
		return &constNode{v: Value{Kind: Double, F: t.f}}, nil
	case tVar:
		return &varNode{name: t.text}, nil
	case tIdent:
		return p.call(t)
	case tCase:
		return p.caseExpr()
	}
	return nil, p.unexpected(t)
}

// call parses NAME ( elist ). As in exprparse.y, elist may begin with a
// lone comma ("abs(, 5)" is abs(5)).
func (p *parser) call(name token) (Node, error) {
	def, ok := functions[asciiLower(name.text)]
	if !ok {
		return nil, &SyntaxError{Msg: "unexpected function name", Detail: name.text, Pos: name.pos, End: name.pos + len(name.text)}
	}
	if _, err := p.expect(tLParen); err != nil {
		return nil, err
	}
	var args []Node
	if p.peek().kind != tRParen {
		if p.peek().kind == tComma {
			p.next()
		}
		for {
			a, err := p.expr(0)
			if err != nil {
				return nil, err
			}
			args = append(args, a)
			if p.peek().kind != tComma {
				break
			}
			p.next()
		}
	}
	rp, err := p.expect(tRParen)
	if err != nil {
		return nil, err
	}
	n := len(args)
	bad := func(msg string) error {
		return &SyntaxError{Msg: msg, Detail: def.name, Pos: rp.pos, End: rp.pos + 1}
	}
	switch def.nargs {
	case nargsVariable:
		if n == 0 {
			return nil, bad("at least one argument expected")
		}
	case nargsHash:
		if n < 1 || n > 2 {
			return nil, bad("unexpected number of arguments")
		}
		if n == 1 {
			args = append(args, defaultSeedNode{})
		}
	case nargsPermute:
		if n < 2 || n > 3 {
			return nil, bad("unexpected number of arguments")
		}
		if n == 2 {
			args = append(args, defaultSeedNode{})
		}
	default:
		if n != def.nargs {
			return nil, bad("unexpected number of arguments")
		}
	}
	return newFuncNode(def.id, args), nil
}

// caseExpr parses CASE WHEN c THEN v [WHEN c THEN v ...] [ELSE e] END.
func (p *parser) caseExpr() (Node, error) {
	c := &caseNode{}
	for {
		if _, err := p.expect(tWhen); err != nil {
			return nil, err
		}
		cond, err := p.expr(0)
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tThen); err != nil {
			return nil, err
		}
		val, err := p.expr(0)
		if err != nil {
			return nil, err
		}
		c.conds = append(c.conds, cond)
		c.vals = append(c.vals, val)
		if p.peek().kind != tWhen {
			break
		}
	}
	switch t := p.next(); t.kind {
	case tEnd:
		c.els = &constNode{v: Value{}}
		return c, nil
	case tElse:
		e, err := p.expr(0)
		if err != nil {
			return nil, err
		}
		c.els = e
		if _, err := p.expect(tEnd); err != nil {
			return nil, err
		}
		return c, nil
	default:
		return nil, p.unexpected(t)
	}
}
