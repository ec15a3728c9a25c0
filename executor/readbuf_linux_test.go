package executor

import (
	"syscall"
	"testing"
)

// The read buffer starts small (with thousands of clients it is most of
// what each holds) and doubles when a read fills it, up to maxReadBuf:
// large replies are read in fewer system calls, and no client's buffer
// grows without bound.
func TestReadBufferGrows(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fds[1])
	if err := syscall.SetNonblock(fds[0], true); err != nil {
		t.Fatal(err)
	}
	c := newConn()
	c.fd = fds[0]
	defer c.close()
	if len(c.rbuf) != readBuf {
		t.Fatalf("a new connection's read buffer holds %d bytes, want %d", len(c.rbuf), readBuf)
	}
	small := make([]byte, 100)
	if _, err := syscall.Write(fds[1], small); err != nil {
		t.Fatal(err)
	}
	if n, err := c.fill(); err != nil || n != 100 || len(c.rbuf) != readBuf {
		t.Fatalf("a 100-byte reply: read %d (%v), buffer %d bytes; want 100 and still %d", n, err, len(c.rbuf), readBuf)
	}
	c.rpos = c.rend // consumed
	sizes := []int{len(c.rbuf)}
	var read int
	for read < 1<<20 {
		if _, err := syscall.Write(fds[1], make([]byte, 128<<10)); err != nil && err != syscall.EAGAIN {
			t.Fatal(err)
		}
		for {
			n, err := c.fill()
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
			read += n
			c.rpos = c.rend // consumed
			if l := len(c.rbuf); l != sizes[len(sizes)-1] {
				sizes = append(sizes, l)
			}
		}
	}
	want := []int{4 << 10, 8 << 10, 16 << 10, 32 << 10, 64 << 10}
	if len(sizes) != len(want) || sizes[len(sizes)-1] != maxReadBuf {
		t.Fatalf("the read buffer went through %v bytes reading 1 MiB, want %v", sizes, want)
	}
	for i := range want {
		if sizes[i] != want[i] {
			t.Fatalf("the read buffer went through %v bytes reading 1 MiB, want %v", sizes, want)
		}
	}
}
