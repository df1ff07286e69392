// Command cloudinfer is the cloudinfer CLI: bench, emulate, invoke, report.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "cloudinfer: no commands yet")
	os.Exit(2)
}
