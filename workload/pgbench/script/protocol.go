package script

// Protocol is how a script's SQL commands are sent (pgbench's -M, query
// mode): as text (simple), as unnamed prepared statements (extended), or
// as named ones, prepared once per connection (prepared).
type Protocol uint8

// The protocols.
const (
	Simple Protocol = iota
	Extended
	Prepared
)

var protocols = [...]string{"simple", "extended", "prepared"}

func (p Protocol) String() string { return protocols[p] }

// ParseProtocol reads a protocol's name; false for any other text. The
// callers word the refusal as their command line does.
func ParseProtocol(s string) (Protocol, bool) {
	for i, name := range protocols {
		if s == name {
			return Protocol(i), true
		}
	}
	return 0, false
}
