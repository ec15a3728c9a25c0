package history

import (
	"errors"
	"fmt"
	"io"
)

// File is a history read whole from a file and checked.
type File struct {
	Result *Result
	Format Format // the format it was read in
	// Level is the isolation level the file records its attempts ran
	// at, when Recorded (txload records it since issue 36; older files
	// and other tools' do not).
	Level    Level
	Recorded bool
	// Clients is the number of clients the file records its run had, when
	// ClientsRecorded (txload records it since issue 36, round 10).
	Clients         int
	ClientsRecorded bool
	lines           []int32 // attempt -> its line
	// beyond counts the attempts of clients numbered Clients or more, the
	// first of them at line beyondLine by client beyondClient.
	beyond, beyondLine, beyondClient int
}

// Beyond says, when the file records its run's clients, which attempts
// are by a client the run did not have ("" none): a line no run of that
// many clients writes.
func (f *File) Beyond() string {
	if f.beyond == 0 {
		return ""
	}
	return fmt.Sprintf("%d by a client the run did not have (it recorded %d, numbered 0 to %d), the first at line %d by client %d",
		f.beyond, f.Clients, f.Clients-1, f.beyondLine, f.beyondClient)
}

// ClientsNote says, for a file that records no number of clients, what is
// assumed ("" when it records one).
func (f *File) ClientsNote() string {
	if f.ClientsRecorded {
		return ""
	}
	return "not recorded (written before txload recorded them, or by another tool): every client number is taken as the run's"
}

// Name names attempt i by its line in the file (for WriteText).
func (f *File) Name(i int) string { return fmt.Sprintf("line %d", f.lines[i]) }

// InputError is a history that cannot be checked as given: it cannot be
// read, an attempt in it is malformed (its line named), or an element is
// appended twice.
type InputError struct {
	Path string
	Err  error
	line bool // Err begins with a line: "PATH, line N: ..."
}

func (e *InputError) Error() string {
	if e.line {
		return e.Path + ", " + e.Err.Error()
	}
	return e.Path + ": " + e.Err.Error()
}

func (e *InputError) Unwrap() error { return e.Err }

// CheckFile reads the history in holds, in format f (Sniff: whichever its
// first characters say), and checks it; path names it in errors. A history
// that cannot be checked as given is an *InputError.
func CheckFile(in io.Reader, path string, f Format) (*File, error) {
	file, _, err := checkFile(in, path, f, false)
	return file, err
}

// CheckFileForFinal is CheckFile for a history a final read of the
// database follows: it returns the checker too, closed, for CheckFinal.
func CheckFileForFinal(in io.Reader, path string, f Format) (*File, *Checker, error) {
	return checkFile(in, path, f, true)
}

func checkFile(in io.Reader, path string, f Format, final bool) (*File, *Checker, error) {
	rd, err := NewReader(in, f)
	if err != nil {
		return nil, nil, &InputError{Path: path, Err: err}
	}
	c := NewChecker()
	if final {
		if err := c.ExpectFinal(); err != nil {
			return nil, nil, err
		}
	}
	file := &File{}
	for {
		a, err := rd.Read()
		if err == io.EOF {
			break
		}
		if err == nil {
			err = c.Add(a)
		}
		if err != nil {
			var le *LineError
			if !errors.As(err, &le) {
				err = &LineError{Line: rd.Line(), Err: err}
			}
			return nil, nil, &InputError{Path: path, Err: err, line: true}
		}
		file.lines = append(file.lines, int32(rd.Line()))
		if n, ok := rd.Clients(); ok && a.Client >= n {
			if file.beyond == 0 {
				file.beyondLine, file.beyondClient = rd.Line(), a.Client
			}
			file.beyond++
		}
	}
	file.Clients, file.ClientsRecorded = rd.Clients()
	file.Format = rd.Format()
	file.Level, file.Recorded = rd.Level()
	if file.Result, err = c.Close(); err != nil {
		var dup *DuplicateAppendError
		if errors.As(err, &dup) {
			return nil, nil, &InputError{Path: path, Err: errors.New(dup.Describe(file.Name))}
		}
		return nil, nil, fmt.Errorf("checking %s: %w", path, err)
	}
	return file, c, nil
}

// Err is nil when the verdict passes; else it says which classes the
// level forbids were found or, none found, could not be ruled out.
func (v Verdict) Err() error {
	switch {
	case v.Violation:
		return fmt.Errorf("the history shows anomalies %s forbids: %s", v.Level, classList(v.Forbidden))
	case len(v.Undecided) > 0:
		return fmt.Errorf("the check could not rule out %s, which %s forbids: its search stopped at its budget", classList(v.Undecided), v.Level)
	}
	return nil
}

// JudgedAt is the level to judge the file at: given, when given (a
// command's --isolation), else the level the file records, else
// serializable. A file that records read uncommitted is judged at read
// committed: no txload run writes that level (PostgreSQL runs it as read
// committed, and txload refuses it), and judged there it would pass the
// aborted reads (G1a) read committed forbids. note, when not "", says
// where a level not the file's own came from, for a line of its own.
func (f *File) JudgedAt(given Level, isGiven bool) (level Level, note string) {
	switch {
	case isGiven && f.Recorded && given != f.Level:
		return given, fmt.Sprintf("%s, from --isolation: the history records %s", given, f.Level)
	case isGiven:
		return given, ""
	case f.Recorded && f.Level == ReadUncommitted:
		return ReadCommitted, "read committed: the history records read uncommitted, which no txload run records (PostgreSQL runs it as read committed)"
	case f.Recorded:
		return f.Level, ""
	}
	return Serializable, "serializable assumed: the history records no level (written before txload recorded it, or by another tool): give the run's with --isolation"
}
