//go:build unix

// Command floor measures what this machine charges a process for one
// streamed chunk at a model's pace, below any agent: a peer writes a line
// over loopback TCP every 20 ms, and the child (a C program and a Go one,
// testdata/) reads it, writes it to a file and to stdout. It prints each
// child's CPU per chunk (rusage, less a 1-line run) and context switches.
// BENCHMARKS.md quotes it next to BenchmarkIngest_PacedFloor:
//
//	cc -O2 -o /tmp/floor-c scripts/floor/testdata/child.c
//	go build -o /tmp/floor-go ./scripts/floor/testdata/child
//	go run ./scripts/floor /tmp/floor-c /tmp/floor-go
//
// It reads rusage, which only Unix has.
package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// run has bin read n lines pace apart and returns its CPU and context
// switches.
func run(bin string, n int, pace time.Duration) (time.Duration, int64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	defer ln.Close()
	dir, err := os.MkdirTemp("", "floor-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command(bin, ln.Addr().String(), filepath.Join(dir, "log"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	c, err := ln.Accept()
	if err != nil {
		return 0, 0, err
	}
	r := bufio.NewReader(out)
	for i := range n {
		fmt.Fprintf(c, "c%05d chunk text of a reply, some words\n", i)
		if _, err := r.ReadBytes('\n'); err != nil {
			return 0, 0, fmt.Errorf("%s: %w", bin, err)
		}
		time.Sleep(pace)
	}
	c.Close()
	if err := cmd.Wait(); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", bin, err)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ru.Nvcsw + ru.Nivcsw, nil
}

func main() {
	for _, bin := range os.Args[1:] {
		for range 3 {
			cpu, sw, err := run(bin, 300, 20*time.Millisecond)
			cpu1, sw1, err1 := run(bin, 1, 0)
			if err != nil || err1 != nil {
				fmt.Fprintln(os.Stderr, "floor:", err, err1)
				os.Exit(1)
			}
			fmt.Printf("%s: %.1f µs cpu/chunk, %.2f switches/chunk\n", bin, float64(cpu-cpu1)/299/1e3, float64(sw-sw1)/299)
		}
	}
}
