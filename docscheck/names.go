package docscheck

import (
	"fmt"
	"go/ast"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// A Package is what the checks know of one Go package: its name, and the
// names it declares, exported or not. Syms holds each top-level name
// ("New") and each member of a type ("Breaker.Stats", "Stats.Retries"):
// methods, struct fields and interface methods.
type Package struct {
	Path   string // the import path; an external test package's ends in _test
	Name   string
	Dir    string
	Module string // the directory of the module's go.mod
	Syms   map[string]bool

	files   []*ast.File
	imports map[string]bool // the import paths of its files
}

// An Index holds the packages of every module of a repository, parsed from
// their directories (tests and all, testdata and hidden directories left
// out), and the packages they import, parsed when a check asks for them.
type Index struct {
	Root     string
	Fset     *token.FileSet
	Packages []*Package            // the repository's, sorted by path
	byPath   map[string][]*Package // a path's package, then its external test package
	modules  map[string]string     // module directory -> module path
	inWork   map[string]bool       // module directories go.work uses
	goroot   string
	external map[string]*Package // import path -> package, nil when not found
	dirs     map[string]string   // import path -> directory, for dependencies
	outside  map[string]bool     // the capitalized words of the packages imported from outside
	names    map[string][]string // package name -> import paths imported under it anywhere
}

// Load parses every package of every module under root (each directory
// holding a go.mod; go.work says which of them the go command builds in
// the workspace, and the others are resolved on their own).
func Load(root string) (*Index, error) {
	ix := &Index{
		Root:     root,
		Fset:     token.NewFileSet(),
		byPath:   map[string][]*Package{},
		modules:  map[string]string{},
		inWork:   map[string]bool{},
		external: map[string]*Package{},
		names:    map[string][]string{},
	}
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return nil, fmt.Errorf("docscheck: go env GOROOT: %w", err)
	}
	ix.goroot = strings.TrimSpace(string(out))
	if work, err := os.ReadFile(filepath.Join(root, "go.work")); err == nil {
		for _, m := range regexp.MustCompile(`(?m)^\s*(\./[\w./-]*|\.)\s*$`).FindAllSubmatch(work, -1) {
			ix.inWork[filepath.Join(root, string(m[1]))] = true
		}
	}
	dirs := map[string][]string{} // directory -> its .go files
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata") {
				return filepath.SkipDir
			}
			if mod, err := os.ReadFile(filepath.Join(p, "go.mod")); err == nil {
				m := regexp.MustCompile(`(?m)^module\s+(\S+)`).FindSubmatch(mod)
				if m == nil {
					return fmt.Errorf("docscheck: %s/go.mod names no module", p)
				}
				ix.modules[p] = string(m[1])
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") {
			dirs[filepath.Dir(p)] = append(dirs[filepath.Dir(p)], p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for dir, files := range dirs {
		mod := dir
		for ix.modules[mod] == "" {
			if mod == root || mod == filepath.Dir(mod) {
				return nil, fmt.Errorf("docscheck: %s is in no module", dir)
			}
			mod = filepath.Dir(mod)
		}
		rel, err := filepath.Rel(mod, dir)
		if err != nil {
			return nil, err
		}
		importPath := path.Join(ix.modules[mod], filepath.ToSlash(rel))
		pkgs, err := ix.parseDir(dir, files, true)
		if err != nil {
			return nil, err
		}
		for _, p := range pkgs {
			p.Module = mod
			p.Path = importPath
			if strings.HasSuffix(p.Name, "_test") {
				p.Path += "_test"
			}
			ix.Packages = append(ix.Packages, p)
		}
	}
	sort.Slice(ix.Packages, func(i, j int) bool { return ix.Packages[i].Path < ix.Packages[j].Path })
	for _, p := range ix.Packages {
		base := strings.TrimSuffix(p.Path, "_test")
		ix.byPath[base] = append(ix.byPath[base], p)
		for _, f := range p.files {
			for _, imp := range f.Imports {
				ip := strings.Trim(imp.Path.Value, `"`)
				name := guessName(ip)
				if imp.Name != nil {
					name = imp.Name.Name
				}
				for _, n := range []string{name, guessName(ip)} {
					if !contains(ix.names[n], ip) {
						ix.names[n] = append(ix.names[n], ip)
					}
				}
			}
		}
	}
	if err := ix.findDependencies(); err != nil {
		return nil, err
	}
	return ix, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// parseDir parses the given files of dir, by package: the package and its
// external test package. Without comments, it keeps no files: the names
// are all an imported package is parsed for.
func (ix *Index) parseDir(dir string, files []string, withComments bool) ([]*Package, error) {
	mode := parser.SkipObjectResolution
	if withComments {
		mode |= parser.ParseComments
	}
	byName := map[string]*Package{}
	var names []string
	sort.Strings(files)
	for _, file := range files {
		f, err := parser.ParseFile(ix.Fset, file, nil, mode)
		if err != nil {
			return nil, fmt.Errorf("docscheck: %w", err)
		}
		name := f.Name.Name
		if name == "documentation" { // a doc.go kept out of every build
			continue
		}
		p := byName[name]
		if p == nil {
			p = &Package{Name: name, Dir: dir, Syms: map[string]bool{}, imports: map[string]bool{}}
			byName[name] = p
			names = append(names, name)
		}
		declare(p.Syms, f)
		for _, imp := range f.Imports {
			p.imports[strings.Trim(imp.Path.Value, `"`)] = true
		}
		if withComments {
			p.files = append(p.files, f)
		}
	}
	sort.Strings(names)
	pkgs := make([]*Package, 0, len(names))
	for _, n := range names {
		pkgs = append(pkgs, byName[n])
	}
	return pkgs, nil
}

// declare adds the names f declares to syms.
func declare(syms map[string]bool, f *ast.File) {
	members := func(typ string, t ast.Expr) {
		switch t := t.(type) {
		case *ast.StructType:
			for _, fld := range t.Fields.List {
				if len(fld.Names) == 0 {
					syms[typ+"."+baseType(fld.Type)] = true
				}
				for _, n := range fld.Names {
					syms[typ+"."+n.Name] = true
				}
			}
		case *ast.InterfaceType:
			for _, m := range t.Methods.List {
				for _, n := range m.Names {
					syms[typ+"."+n.Name] = true
				}
			}
		}
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil || len(d.Recv.List) == 0 {
				syms[d.Name.Name] = true
				continue
			}
			syms[baseType(d.Recv.List[0].Type)+"."+d.Name.Name] = true
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					syms[s.Name.Name] = true
					members(s.Name.Name, s.Type)
				case *ast.ValueSpec:
					for _, n := range s.Names {
						syms[n.Name] = true
					}
				}
			}
		}
	}
}

// baseType returns the name of the type an expression such as *Window[T]
// or pkg.Type names.
func baseType(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.SelectorExpr:
			return t.Sel.Name
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}

// guessName returns the name a package at an import path is likely
// declared with: its last element, without a major version or a go- prefix
// (github.com/redis/go-redis/v9 declares redis). Callers confirm the guess
// against the package clause.
func guessName(importPath string) string {
	elems := strings.Split(importPath, "/")
	last := elems[len(elems)-1]
	if regexp.MustCompile(`^v[0-9]+$`).MatchString(last) && len(elems) > 1 {
		last = elems[len(elems)-2]
	}
	last = strings.TrimPrefix(last, "go-")
	last = strings.TrimSuffix(last, ".go")
	return strings.ReplaceAll(last, "-", "")
}

// Repo returns the repository's package at an import path (not its
// external test package), or nil.
func (ix *Index) Repo(importPath string) *Package {
	for _, p := range ix.byPath[importPath] {
		if !strings.HasSuffix(p.Name, "_test") {
			return p
		}
	}
	return nil
}

// Lookup returns the package at an import path: the repository's, or one
// of the standard library or a dependency, parsed once from its directory.
// It returns nil when the package cannot be found.
func (ix *Index) Lookup(importPath string) *Package {
	if p := ix.Repo(importPath); p != nil {
		return p
	}
	if p, ok := ix.external[importPath]; ok {
		return p
	}
	dir := ix.dirs[importPath]
	if dir == "" && !strings.Contains(strings.Split(importPath, "/")[0], ".") {
		dir = filepath.Join(ix.goroot, "src", filepath.FromSlash(importPath))
	}
	var pkg *Package
	if dir != "" {
		var files []string
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
				files = append(files, filepath.Join(dir, n))
			}
		}
		if pkgs, err := ix.parseDir(dir, files, false); err == nil {
			for _, p := range pkgs {
				if p.Name != "main" && p.Name != "documentation" {
					p.Path = importPath
					pkg = p
				}
			}
		}
	}
	ix.external[importPath] = pkg
	return pkg
}

// findDependencies sets the directories of the packages that the
// repository's packages import from other modules, with one `go list -find`
// for the modules of go.work and one for each module outside it.
func (ix *Index) findDependencies() error {
	ix.dirs = map[string]string{}
	byContext := map[string][]string{} // "" for the workspace, else a module directory
	seen := map[string]bool{}
	for _, p := range ix.Packages {
		ctx := ""
		if !ix.inWork[p.Module] {
			ctx = p.Module
		}
		for ip := range p.imports {
			if ix.Repo(ip) != nil || !strings.Contains(strings.Split(ip, "/")[0], ".") || seen[ctx+" "+ip] {
				continue
			}
			seen[ctx+" "+ip] = true
			byContext[ctx] = append(byContext[ctx], ip)
		}
	}
	for ctx, paths := range byContext {
		sort.Strings(paths)
		cmd := exec.Command("go", append([]string{"list", "-e", "-find", "-f", "{{.ImportPath}}\t{{.Dir}}"}, paths...)...)
		cmd.Dir, cmd.Env = ix.Root, os.Environ()
		if ctx != "" {
			cmd.Dir, cmd.Env = ctx, append(cmd.Env, "GOWORK=off")
		}
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("docscheck: go list in %s: %w", cmd.Dir, err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if ip, dir, ok := strings.Cut(line, "\t"); ok && dir != "" {
				ix.dirs[ip] = dir
			}
		}
	}
	return nil
}

// A Problem is a stale name found at a position: file:line, relative to
// the repository.
type Problem struct {
	Pos  string
	Text string
}

func (p Problem) String() string { return p.Pos + ": " + p.Text }

func (ix *Index) pos(pos token.Pos) string {
	position := ix.Fset.Position(pos)
	rel, err := filepath.Rel(ix.Root, position.Filename)
	if err != nil {
		rel = position.Filename
	}
	return fmt.Sprintf("%s:%d", filepath.ToSlash(rel), position.Line)
}

// DocLinks checks the doc links of every comment of every package (see
// [comment.DocLink]), written in brackets: a name or Type.Method against
// the package's own declarations (an external test package's and the
// package it tests'), pkg.Name and pkg.Type.Method against the package its
// files import under that name (or this package, or a standard library
// package, as go doc resolves them). A bracketed lower-case word, such as
// an index, is no link.
func (ix *Index) DocLinks() []Problem {
	var problems []Problem
	for _, p := range ix.Packages {
		for _, f := range p.files {
			for _, cg := range f.Comments {
				for _, l := range docLinks(cg.Text()) {
					if msg := ix.resolveLink(p, l); msg != "" {
						problems = append(problems, Problem{Pos: ix.pos(linkPos(cg, l)), Text: msg})
					}
				}
			}
		}
	}
	return problems
}

// docLinks returns the doc links that go doc could make of text, were
// every package name and exported name it brackets declared.
func docLinks(text string) []*comment.DocLink {
	parser := comment.Parser{
		LookupPackage: func(name string) (string, bool) { return name, true },
		LookupSym: func(recv, name string) bool {
			return recv != "" || token.IsExported(name)
		},
	}
	var links []*comment.DocLink
	var walk func(texts []comment.Text)
	walk = func(texts []comment.Text) {
		for _, t := range texts {
			switch t := t.(type) {
			case *comment.DocLink:
				links = append(links, t)
			case *comment.Link:
				walk(t.Text)
			case *comment.Italic, comment.Plain:
			}
		}
	}
	for _, b := range parser.Parse(text).Content {
		switch b := b.(type) {
		case *comment.Paragraph:
			walk(b.Text)
		case *comment.Heading:
			walk(b.Text)
		case *comment.List:
			for _, it := range b.Items {
				for _, c := range it.Content {
					if para, ok := c.(*comment.Paragraph); ok {
						walk(para.Text)
					}
				}
			}
		}
	}
	return links
}

// linkText returns a link as it is written between its brackets, the
// star of a pointer aside.
func linkText(l *comment.DocLink) string {
	parts := []string{}
	for _, s := range []string{l.ImportPath, l.Recv, l.Name} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, ".")
}

// linkPos returns the position of the comment line of cg that holds l.
func linkPos(cg *ast.CommentGroup, l *comment.DocLink) token.Pos {
	text := linkText(l)
	for _, c := range cg.List {
		if strings.Contains(c.Text, "["+text+"]") || strings.Contains(c.Text, "[*"+text+"]") {
			return c.Pos()
		}
	}
	return cg.Pos()
}

// resolveLink returns why l, in a comment of p, resolves to nothing, or ""
// when it resolves.
func (ix *Index) resolveLink(p *Package, l *comment.DocLink) string {
	if l.Name == "" { // a package by its path, or a bracketed word, which is no link
		if strings.Contains(l.ImportPath, "/") && strings.HasPrefix(l.ImportPath, ix.modules[ix.Root]+"/") &&
			ix.Repo(l.ImportPath) == nil {
			return fmt.Sprintf("[%s] names no package of the repository", l.ImportPath)
		}
		return ""
	}
	sym := l.Name
	if l.Recv != "" {
		sym = l.Recv + "." + l.Name
	}
	if l.ImportPath == "" {
		if p.Syms[sym] || ix.testedHas(p, sym) {
			return ""
		}
		return fmt.Sprintf("[%s]: package %s declares no %s", linkText(l), p.Name, sym)
	}
	target := ix.linkedPackage(p, l.ImportPath)
	if target == nil {
		return fmt.Sprintf("[%s]: %s is not a package the file's package imports (nor the standard library's)", linkText(l), l.ImportPath)
	}
	if target.Syms[sym] || (target == p && ix.testedHas(p, sym)) {
		return ""
	}
	return fmt.Sprintf("[%s]: package %s (%s) declares no %s", linkText(l), target.Name, target.Path, sym)
}

// testedHas reports whether p is an external test package and the package
// it tests declares sym.
func (ix *Index) testedHas(p *Package, sym string) bool {
	if !strings.HasSuffix(p.Name, "_test") {
		return false
	}
	tested := ix.Repo(strings.TrimSuffix(p.Path, "_test"))
	return tested != nil && tested.Syms[sym]
}

// linkedPackage returns the package that name (a package name or an import
// path) stands for in a doc link of p, as go doc resolves it, or nil.
func (ix *Index) linkedPackage(p *Package, name string) *Package {
	if strings.Contains(name, "/") {
		return ix.Lookup(name)
	}
	for ip := range p.imports {
		if explicit := importedAs(p, ip); explicit != "" {
			if explicit == name {
				return ix.Lookup(ip)
			}
		} else if guessName(ip) == name {
			if q := ix.Lookup(ip); q != nil && q.Name == name {
				return q
			}
		}
	}
	if strings.TrimSuffix(p.Name, "_test") == name {
		return ix.Repo(strings.TrimSuffix(p.Path, "_test"))
	}
	if ip, ok := comment.DefaultLookupPackage(name); ok {
		return ix.Lookup(ip)
	}
	return nil
}

// importedAs returns the name p's files import ip under explicitly, or "".
func importedAs(p *Package, ip string) string {
	for _, f := range p.files {
		for _, i := range f.Imports {
			if strings.Trim(i.Path.Value, `"`) == ip && i.Name != nil {
				return i.Name.Name
			}
		}
	}
	return ""
}

// A Token is a name written in backticks in a Markdown page or a Go
// comment.
type Token struct {
	Pos  string // file:line
	Text string // as written, between the backticks
}

var codeSpan = regexp.MustCompile("`([^`]+)`")

// spans returns the backticked spans of the lines of a paragraph, which
// may run from one line to the next, each with the index of its first
// line.
func spans(lines []string) (texts []string, at []int) {
	joined := strings.Join(lines, "\n")
	for _, m := range codeSpan.FindAllStringSubmatchIndex(joined, -1) {
		texts = append(texts, strings.ReplaceAll(joined[m[2]:m[3]], "\n", " "))
		at = append(at, strings.Count(joined[:m[0]], "\n"))
	}
	return texts, at
}

// MarkdownTokens returns the backticked spans of a Markdown page, outside
// its fenced blocks.
func MarkdownTokens(file string, src []byte) []Token {
	var tokens []Token
	var para []string
	first := 0 // the index of the paragraph's first line
	flush := func() {
		texts, at := spans(para)
		for i, t := range texts {
			tokens = append(tokens, Token{Pos: fmt.Sprintf("%s:%d", file, first+at[i]+1), Text: t})
		}
		para = nil
	}
	proseLines(src, func(n int, line string, afterFence bool) {
		if afterFence {
			flush() // a fenced block ends a paragraph
		}
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimLeft(line, " "), "|") {
			flush() // a table's row is a paragraph of its own
			if strings.TrimSpace(line) == "" {
				return
			}
		}
		if len(para) == 0 {
			first = n
		}
		para = append(para, line)
	})
	flush()
	return tokens
}

// CommentTokens returns the backticked spans of the repository's Go
// comments.
func (ix *Index) CommentTokens() []Token {
	var tokens []Token
	for _, p := range ix.Packages {
		for _, f := range p.files {
			for _, cg := range f.Comments {
				lines := make([]string, len(cg.List))
				for i, c := range cg.List {
					lines[i] = c.Text
				}
				texts, at := spans(lines)
				for i, t := range texts {
					tokens = append(tokens, Token{Pos: ix.pos(cg.List[at[i]].Pos()), Text: t})
				}
			}
		}
	}
	return tokens
}

var goName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,2}$`)

// Name returns the Go name a backticked span stands for: the span without
// a leading * or &, a call's arguments or a type's type arguments, when
// what is left is an identifier or two or three joined by dots, the last
// one exported and not in capitals alone (K, GOWORK and CRITICAL_PLUS are
// no names of Go code). Otherwise it returns "".
func Name(span string) string {
	s := strings.TrimLeft(strings.TrimSpace(span), "*&")
	if i := strings.IndexAny(s, "(["); i > 0 {
		s = s[:i]
	}
	if !goName.MatchString(s) {
		return ""
	}
	last := s[strings.LastIndexByte(s, '.')+1:]
	if !token.IsExported(last) || strings.ToUpper(last) == last {
		return ""
	}
	return s
}

// CheckName returns why the name a span stands for names nothing: allow
// holds the names that are other projects', each whole ("Makefile") or by
// its package ("gobreaker."). It returns "" for a name that exists, or a
// span that is no name.
//
//   - Name: a top-level name of a package of the repository, or a member
//     (method or field) of one of its types.
//   - pkg.Name, pkg.Type.Member: the name in a package of that name of the
//     repository, or of the standard library, or imported under that name
//     by a file of the repository.
//   - Type.Member: a member of a type of that name of the repository.
//   - v.Member, v a variable (b.Stats): a member of a type of the
//     repository.
func (ix *Index) CheckName(span string, allow map[string]string) string {
	name := Name(span)
	if name == "" {
		return ""
	}
	if _, ok := allow[name]; ok {
		return ""
	}
	for key := range allow {
		if strings.HasSuffix(key, ".") && strings.HasPrefix(name, key) {
			return ""
		}
	}
	parts := strings.Split(name, ".")
	// anyRepo reports whether sym is declared; member lets a member of a
	// type do. A sym of ".Name" is a member alone: a variable's method or
	// field.
	anyRepo := func(sym string, member bool) bool {
		for _, p := range ix.Packages {
			if p.Syms[sym] {
				return true
			}
			if member {
				for s := range p.Syms {
					if strings.HasSuffix(s, "."+strings.TrimPrefix(sym, ".")) {
						return true
					}
				}
			}
		}
		if strings.Contains(sym, "_") && !strings.Contains(sym, ".") &&
			(anyRepoTop(ix, "Test"+sym) || anyRepoTop(ix, "Benchmark"+sym) || anyRepoTop(ix, "Fuzz"+sym)) {
			return true
		}
		return ix.declaredOutside(sym[strings.LastIndexByte(sym, '.')+1:])
	}
	switch {
	case len(parts) == 1:
		if anyRepo(name, true) {
			return ""
		}
		return fmt.Sprintf("`%s` names nothing in the repository's packages", span)
	case token.IsExported(parts[0]) && len(parts) == 2:
		if anyRepo(name, false) {
			return ""
		}
		return fmt.Sprintf("`%s`: no type %s of the repository has %s", span, parts[0], parts[1])
	}
	pkgs := ix.packagesNamed(parts[0])
	sym := strings.Join(parts[1:], ".")
	if len(pkgs) == 0 {
		if len(parts) == 2 && anyRepo("."+parts[1], true) {
			return "" // a variable's method or field
		}
		return fmt.Sprintf("`%s`: %s is no package the repository knows, and no type of it has %s", span, parts[0], parts[len(parts)-1])
	}
	for _, p := range pkgs {
		if p.Syms[sym] {
			return ""
		}
	}
	return fmt.Sprintf("`%s`: package %s declares no %s", span, parts[0], sym)
}

// anyRepoTop reports whether a package of the repository declares sym.
func anyRepoTop(ix *Index, sym string) bool {
	for _, p := range ix.Packages {
		if p.Syms[sym] {
			return true
		}
	}
	return false
}

// declaredOutside reports whether a package the repository imports, from
// the standard library or another module, holds the word name in its
// source. Parsing them all would take seconds; a name of another project's
// written in a doc is checked for being a word of its source, not for
// being declared.
func (ix *Index) declaredOutside(name string) bool {
	if ix.outside == nil {
		ix.outside = map[string]bool{}
		seen := map[string]bool{}
		for _, p := range ix.Packages {
			for ip := range p.imports {
				if seen[ip] || ix.Repo(ip) != nil {
					continue
				}
				seen[ip] = true
				dir := ix.dirs[ip]
				if dir == "" && !strings.Contains(strings.Split(ip, "/")[0], ".") {
					dir = filepath.Join(ix.goroot, "src", filepath.FromSlash(ip))
				}
				entries, _ := os.ReadDir(dir)
				for _, e := range entries {
					if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
						if src, err := os.ReadFile(filepath.Join(dir, n)); err == nil {
							addWords(ix.outside, src)
						}
					}
				}
			}
		}
	}
	return ix.outside[name]
}

// addWords adds to words the words of src that start with a capital
// letter.
func addWords(words map[string]bool, src []byte) {
	isWord := func(c byte) bool {
		return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
	}
	for i := 0; i < len(src); {
		if !isWord(src[i]) {
			i++
			continue
		}
		j := i
		for j < len(src) && isWord(src[j]) {
			j++
		}
		if 'A' <= src[i] && src[i] <= 'Z' {
			words[string(src[i:j])] = true
		}
		i = j
	}
}

// packagesNamed returns the packages that a name stands for: the
// repository's packages of that name, and the standard library's or
// dependencies' packages that it imports under it.
func (ix *Index) packagesNamed(name string) []*Package {
	var pkgs []*Package
	for _, p := range ix.Packages {
		if p.Name == name && p.Name != "main" {
			pkgs = append(pkgs, p)
		}
	}
	for _, ip := range ix.names[name] {
		if q := ix.Lookup(ip); q != nil {
			pkgs = append(pkgs, q)
		}
	}
	if len(pkgs) == 0 {
		if ip, ok := comment.DefaultLookupPackage(name); ok {
			if q := ix.Lookup(ip); q != nil {
				pkgs = append(pkgs, q)
			}
		}
	}
	return pkgs
}
