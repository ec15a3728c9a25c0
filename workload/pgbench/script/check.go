package script

import "fmt"

// checkConditionals is pgbench's CheckConditional, run (as pgbench does)
// once the whole script is parsed; it also links each \if chain: Next of
// If/Elif/Else is the chain's next branch, Next of Endif its own index + 1,
// and End of all of them the index of the Endif. pgbench names the command
// by its number; the error here names its line too (for an \if left open,
// the line of the innermost one).
func (p *parser) checkConditionals() error {
	condError := func(c *Command, cmdn int, msg string) *Error {
		return &Error{File: c.File, Line: c.Line, Msg: msg,
			pg: pgForm{plain: fmt.Sprintf("condition error in script \"%s\" command %d: %s", p.file, cmdn, msg)}}
	}
	type frame struct {
		chain   []int // indexes of the If and its Elif/Else so far
		hasElse bool
	}
	var stack []frame
	for i := range p.cmds {
		c := &p.cmds[i]
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		switch c.Kind {
		case If:
			stack = append(stack, frame{chain: []int{i}})
		case Elif, Else:
			name := map[Kind]string{Elif: `\elif`, Else: `\else`}[c.Kind]
			if top == nil {
				return condError(c, i+1, name+` without matching \if`)
			}
			if top.hasElse {
				return condError(c, i+1, name+` after \else`)
			}
			p.cmds[top.chain[len(top.chain)-1]].Next = i
			top.chain = append(top.chain, i)
			top.hasElse = c.Kind == Else
		case Endif:
			if top == nil {
				return condError(c, i+1, `\endif without matching \if`)
			}
			p.cmds[top.chain[len(top.chain)-1]].Next = i
			for _, j := range top.chain {
				p.cmds[j].End = i
			}
			c.Next, c.End = i+1, i
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) > 0 {
		c := &p.cmds[stack[len(stack)-1].chain[0]]
		return condError(c, len(p.cmds)+1, `\if without matching \endif`)
	}
	return nil
}

// Pipeline states, as a set of the states a command may run in.
const (
	pipeOff = 1 << iota
	pipeOn
)

// CheckPipelines rejects what pgbench would certainly fail on when running
// s (pgbench finds these only then, and aborts the client: `txload
// pgbench` does the same, `txload run script` refuses the script before
// it touches the database): \startpipeline inside a pipeline,
// \endpipeline or \syncpipeline outside one, \gset or \aset in one, and
// the end of the script with a pipeline open. Through \if branches a
// command may run with the pipeline on or off (pgbench allows such a
// script as long as the branches taken pair up); only a command wrong in
// every case is an error.
func CheckPipelines(s *Script) error {
	p := &parser{file: s.Name, cmds: s.Commands, gsetLines: s.gsetLines}
	return p.checkPipelines()
}

func (p *parser) checkPipelines() error {
	type frame struct {
		entry, exits int
		hasElse      bool
	}
	var stack []frame
	cur := pipeOff
	lastStart := 0 // line of the last \startpipeline
	for i := range p.cmds {
		c := &p.cmds[i]
		fail := func(msg string) error { return &Error{File: c.File, Line: c.Line, Msg: msg} }
		switch c.Kind {
		case If:
			stack = append(stack, frame{entry: cur})
		case Elif, Else:
			top := &stack[len(stack)-1]
			top.exits |= cur
			cur = top.entry
			top.hasElse = c.Kind == Else
		case Endif:
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			cur |= top.exits
			if !top.hasElse {
				// No branch taken.
				cur |= top.entry
			}
		case StartPipeline:
			if cur == pipeOn {
				return fail(`\startpipeline: already in pipeline mode`)
			}
			cur = pipeOn
			lastStart = c.Line
		case EndPipeline, SyncPipeline:
			if cur == pipeOff {
				return fail(map[Kind]string{EndPipeline: `\endpipeline`, SyncPipeline: `\syncpipeline`}[c.Kind] +
					`: not in pipeline mode`)
			}
			if c.Kind == EndPipeline {
				cur = pipeOff
			}
		case SQL:
			if (c.Gset || c.Aset) && cur == pipeOn {
				name := `\gset`
				if c.Aset {
					name = `\aset`
				}
				line := c.Line
				if l, ok := p.gsetLines[i]; ok {
					line = l
				}
				return &Error{File: c.File, Line: line, Msg: name + " is not allowed in pipeline mode"}
			}
		}
	}
	if cur == pipeOn {
		return &Error{File: p.file, Line: lastStart, Msg: `end of script reached with pipeline open`}
	}
	return nil
}
