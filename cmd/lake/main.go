// Command lake runs local mode and drives a lake catalog: register, list,
// show, refresh, drop and backfill tables. `lake help` lists the commands;
// `lake completion bash` prints shell completion.
package main

import (
	"os"

	"github.com/lake-catalog/lake/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Getenv, os.Stdout, os.Stderr)) }
