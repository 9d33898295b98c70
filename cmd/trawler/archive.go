package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/trawlerhq/trawler/internal/app"
	"github.com/trawlerhq/trawler/services/archive"
)

// archiveCmd runs the archive sinks as a service: WARC files of every fetched
// page and JSON Lines of parsed pages in one directory (docs/archive.md).
// Replicas share the sinks' durable consumers; give each its own directory
// or one shared volume (file names carry the host and a random token).
func archiveCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var remove bool
	cfg, _, err := parse("archive", args, stderr, func(fs *flag.FlagSet) {
		fs.BoolVar(&remove, "remove", false, "delete the archive's durable consumers and exit: PAGES stops keeping pages for it")
	})
	if err != nil {
		return err
	}
	dir := cfg.Archive
	if dir == "" {
		dir = cfg.Out // `trawler archive --out DIR` reads naturally
	}
	cfg.Archive = dir
	m, err := app.Lookup("archive")
	if err != nil {
		return err
	}
	base := newLogger(stderr, cfg)
	d, err := m.Open(ctx, cfg, base)
	if err != nil {
		return err
	}
	defer d.Close()
	if remove {
		if err := archive.DeleteConsumers(ctx, d.JS, d.Names); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "removed the archive consumers of %s\n", cfg.Prefix)
		return nil
	}
	if dir == "" {
		fmt.Fprintln(stderr, "trawler archive: give the directory with --out DIR (or --archive DIR)")
		return errUsage
	}
	return runModule(ctx, m, d, base)
}
