// Package hobbs carries the assets an installed hobbs binary needs without
// the repository: the instance templates, the image build context (dist/),
// the Hobbs identity, the framework skills and the shell start-up scripts.
// `hobbs init` seeds an instance from Templates; `hobbs build` writes the
// image build context from all of them.
package hobbs

import (
	"embed"
	"io/fs"
)

//go:embed templates dist src/agents src/skills src/shell.d
var assets embed.FS

// Assets is the whole embedded tree, rooted at the repository root
// (templates/…, dist/…, src/agents/…, src/skills/…, src/shell.d/…).
var Assets fs.FS = assets

// Templates is templates/ with its files at the root.
var Templates = mustSub("templates")

// Dist is dist/ with its files at the root.
var Dist = mustSub("dist")

func mustSub(dir string) fs.FS {
	sub, err := fs.Sub(assets, dir)
	if err != nil {
		panic(err)
	}
	return sub
}
