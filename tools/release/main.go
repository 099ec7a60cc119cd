// Command modproxy packs modules of this repository at a candidate version
// into a file-based module proxy, so that the go command can fetch them the
// way a user's go get fetches a tagged release:
//
//	go run . -o DIR -version v0.1.0 MODULE_DIR...
//
// With GOPROXY=file://DIR, the go command then finds, for each module,
// DIR/<module>/@v/list, <version>.info, <version>.mod and <version>.zip.
//
// A module's zip holds what a tag of the working tree would hold: the files
// git tracks or would track (not those it ignores), without the directories
// of nested modules, under the prefix module@version/, in the format of
// golang.org/x/mod/zip. Like the Go module proxy, it adds the repository's
// LICENSE to a module in a subdirectory that has none of its own. Outside a
// git checkout, every file in the directory counts.
//
// modproxy refuses a go.mod that a user's build would read differently from
// ours: one with a replace directive (Go ignores replace outside the main
// module) or one that requires a module at the zero pseudo-version
// v0.0.0-00010101000000-000000000000, a placeholder no proxy serves.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// zeroPseudo is the version `go mod edit -require` and `replace` recipes
// put in a go.mod for a module that has no release yet.
const zeroPseudo = "v0.0.0-00010101000000-000000000000"

func main() {
	out := flag.String("o", "", "directory of the file-based proxy (created if missing)")
	version := flag.String("version", "v0.1.0", "the candidate version every module is packed at")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: modproxy -o DIR [-version V] MODULE_DIR...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *out == "" || flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	failed := false
	for _, dir := range flag.Args() {
		m, err := pack(*out, *version, dir)
		if err != nil {
			fmt.Fprintf(os.Stderr, "modproxy: %v\n", err)
			failed = true
			continue
		}
		fmt.Printf("packed %s@%s from %s\n", m.Path, m.Version, dir)
	}
	if failed {
		os.Exit(1)
	}
}

// pack writes the module in dir at version into the proxy at out.
func pack(out, version, dir string) (module.Version, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return module.Version{}, err
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return module.Version{}, err
	}
	mf, err := modfile.Parse(filepath.Join(dir, "go.mod"), gomod, nil)
	if err != nil {
		return module.Version{}, err
	}
	if mf.Module == nil {
		return module.Version{}, fmt.Errorf("%s/go.mod: no module line", dir)
	}
	m := module.Version{Path: mf.Module.Mod.Path, Version: version}
	if err := checkPublishable(dir, mf); err != nil {
		return m, err
	}

	files, err := moduleFiles(dir)
	if err != nil {
		return m, err
	}
	var zip bytes.Buffer
	if err := modzip.Create(&zip, m, files); err != nil {
		return m, err
	}

	escPath, err := module.EscapePath(m.Path)
	if err != nil {
		return m, err
	}
	escVersion, err := module.EscapeVersion(m.Version)
	if err != nil {
		return m, err
	}
	vdir := filepath.Join(out, filepath.FromSlash(escPath), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return m, err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{m.Version, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return m, err
	}
	for name, data := range map[string][]byte{
		"list":               []byte(m.Version + "\n"),
		escVersion + ".info": info,
		escVersion + ".mod":  gomod,
		escVersion + ".zip":  zip.Bytes(),
	} {
		if err := os.WriteFile(filepath.Join(vdir, name), data, 0o644); err != nil {
			return m, err
		}
	}
	return m, nil
}

// checkPublishable reports the directives of mf that a user's build would not
// honour, or could not resolve.
func checkPublishable(dir string, mf *modfile.File) error {
	var errs []error
	for _, r := range mf.Replace {
		errs = append(errs, fmt.Errorf("%s/go.mod: replace %s: a published go.mod carries no replace, "+
			"because Go ignores it outside the main module and a user would build something else "+
			"(go.work points the candidate versions at this checkout)", dir, r.Old.Path))
	}
	for _, r := range mf.Require {
		if r.Mod.Version == zeroPseudo {
			errs = append(errs, fmt.Errorf("%s/go.mod: requires %s %s, a placeholder no proxy serves; "+
				"require the candidate version (docs/design/releasing.md)", dir, r.Mod.Path, r.Mod.Version))
		}
	}
	return errors.Join(errs...)
}

// moduleFiles lists the files of the module in dir, relative to dir: what git
// tracks or would track there, or every file outside a git checkout. Create
// leaves out those of nested modules and vendored packages.
func moduleFiles(dir string) ([]modzip.File, error) {
	var files []modzip.File
	add := func(rel string) {
		files = append(files, diskFile{path: filepath.Join(dir, filepath.FromSlash(rel)), rel: rel})
	}
	ls := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	ls.Dir = dir
	listed, err := ls.Output()
	if err != nil {
		// Not a git checkout: every regular file but version-control metadata.
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				switch d.Name() {
				case ".git", ".hg", ".svn", ".bzr":
					return filepath.SkipDir
				}
				return nil
			}
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			add(filepath.ToSlash(rel))
			return nil
		})
		return files, err
	}
	haveLicense := false
	for _, rel := range strings.Split(string(listed), "\x00") {
		if rel == "" {
			continue
		}
		// A tracked file deleted from the working tree is not in it.
		if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(rel))); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		add(rel)
		haveLicense = haveLicense || rel == "LICENSE"
	}
	if !haveLicense {
		top := exec.Command("git", "rev-parse", "--show-toplevel")
		top.Dir = dir
		root, err := top.Output()
		if err != nil {
			return nil, err
		}
		license := filepath.Join(strings.TrimSpace(string(root)), "LICENSE")
		if _, err := os.Stat(license); err == nil {
			files = append(files, diskFile{path: license, rel: "LICENSE"})
		}
	}
	return files, nil
}

// diskFile is a file of the working tree, named rel (slash-separated, relative
// to the module's root) in the zip.
type diskFile struct{ path, rel string }

func (f diskFile) Path() string                 { return path.Clean(f.rel) }
func (f diskFile) Lstat() (os.FileInfo, error)  { return os.Lstat(f.path) }
func (f diskFile) Open() (io.ReadCloser, error) { return os.Open(f.path) }
