// Package pgwire encodes and decodes the messages of PostgreSQL's wire
// protocol (3.0) that txload's executor speaks, as pure functions: each
// frontend message is appended to a buffer by its Encode, and each backend
// message is framed by Next and read by its Decode function. Nothing here
// does I/O, and nothing allocates when the buffer has room (an error
// message's strings excepted).
package pgwire
