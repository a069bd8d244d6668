// Command child is scripts/floor's Go child: for each line from the TCP
// peer, a line to a file (the record) and then to stdout (the update).
package main

import (
	"bufio"
	"net"
	"os"
)

func main() {
	c, err := net.Dial("tcp", os.Args[1])
	if err != nil {
		panic(err)
	}
	f, err := os.OpenFile(os.Args[2], os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		panic(err)
	}
	r := bufio.NewReader(c)
	var out []byte
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		out = append(out[:0], `{"jsonrpc":"2.0","method":"session/update","params":{"text":"`...)
		out = append(out, line[:len(line)-1]...)
		out = append(out, "\"}}\n"...)
		f.Write(out)
		os.Stdout.Write(out)
	}
}
