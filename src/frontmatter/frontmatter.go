// Package frontmatter reads and writes Markdown files that start with a YAML
// frontmatter block:
//
//	---
//	key: value
//	---
//	body…
//
// Errors are *ParseError values naming the file and the line in the file
// (not in the YAML block), so a user can jump straight to the problem.
package frontmatter

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// ParseError is a problem at a line of a file.
type ParseError struct {
	Path   string
	Line   int // 1-based; 0 when unknown
	Reason string
}

func (e *ParseError) Error() string { return Problem{e.Path, e.Line, e.Reason}.String() }

// Problem is a file that cannot be used, or one thing wrong with it, located
// by line (1-based; 0 when it concerns the whole file). Packages that list
// files report the ones they skip as Problems and leave them as they are.
type Problem struct {
	Path   string `json:"path"`
	Line   int    `json:"line"`
	Reason string `json:"reason"`
}

func (p Problem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.Path, p.Line, p.Reason)
	}
	return fmt.Sprintf("%s: %s", p.Path, p.Reason)
}

// ProblemOf describes why the file at path could not be used: the line and
// reason of a *ParseError, otherwise the whole error.
func ProblemOf(path string, err error) Problem {
	var pe *ParseError
	if errors.As(err, &pe) {
		return Problem{Path: pe.Path, Line: pe.Line, Reason: pe.Reason}
	}
	// An error that starts with the path (the safe-open layer's refusals)
	// says it once.
	return Problem{Path: path, Reason: strings.TrimPrefix(err.Error(), path+" ")}
}

const delim = "---"

// Messages of the two ways a file can lack a frontmatter block.
const (
	ReasonMissing   = `no frontmatter: the file must start with a line "---"`
	ReasonNotClosed = `frontmatter is not closed: no second line "---"`
)

// Block locates the frontmatter block of data without copying: fm is the
// YAML between the opening and the closing "---" lines (its first line is
// line 2 of the file), body is what follows the closing line, closing is the
// 0-based index of the closing line. A leading byte order mark is skipped;
// "---" lines may end in spaces, tabs or "\r". This is the one definition of
// a frontmatter block for every Hobbs file format. The *ParseError it returns
// has no Path (Split adds it).
func Block(data []byte) (fm, body []byte, closing int, err error) {
	if !Starts(data) {
		return nil, nil, 0, &ParseError{Line: 1, Reason: ReasonMissing}
	}
	_, rest, _ := bytes.Cut(data, []byte("\n"))
	for i, r := 1, rest; ; i++ {
		l, next, more := bytes.Cut(r, []byte("\n"))
		if isDelim(l) {
			return rest[:len(rest)-len(r)], next, i, nil
		}
		if !more {
			return nil, nil, 0, &ParseError{Line: 1, Reason: ReasonNotClosed}
		}
		r = next
	}
}

// Starts reports whether data opens a frontmatter block (its first line,
// after a byte order mark, is "---"), closed or not.
func Starts(data []byte) bool {
	first, _, _ := bytes.Cut(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), []byte("\n"))
	return isDelim(first)
}

func isDelim(line []byte) bool { return string(bytes.TrimRight(line, "\r \t")) == delim }

// Split separates the frontmatter from the body (see Block). yamlStart is
// the 1-based file line of the first YAML line.
func Split(path string, data []byte) (fm, body []byte, yamlStart int, err error) {
	fm, body, _, err = Block(data)
	if err != nil {
		err.(*ParseError).Path = path
		return nil, nil, 0, err
	}
	return fm, body, 2, nil
}

var yamlLineRe = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// Decode splits data and decodes its frontmatter into v. With strict,
// unknown keys are errors. It returns the body and the frontmatter node
// (for line lookups).
func Decode(path string, data []byte, v any, strict bool) (body []byte, node *yaml.Node, err error) {
	fm, body, start, err := Split(path, data)
	if err != nil {
		return nil, nil, err
	}
	var root yaml.Node
	if err := yaml.Unmarshal(fm, &root); err != nil {
		return nil, nil, yamlErr(path, start, err)
	}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil, nil, &ParseError{Path: path, Line: start, Reason: "frontmatter must be a mapping of keys to values"}
	}
	dec := yaml.NewDecoder(bytes.NewReader(fm))
	dec.KnownFields(strict)
	if err := dec.Decode(v); err != nil {
		return nil, nil, yamlErr(path, start, err)
	}
	shiftLines(root.Content[0], start-1)
	return body, root.Content[0], nil
}

func shiftLines(n *yaml.Node, by int) {
	n.Line += by
	for _, c := range n.Content {
		shiftLines(c, by)
	}
}

func yamlErr(path string, start int, err error) error {
	line, msg := YAMLLine(err)
	if line == 0 {
		return &ParseError{Path: path, Line: start, Reason: msg}
	}
	return &ParseError{Path: path, Line: start + line - 1, Reason: msg}
}

// YAMLLine splits an error of yaml.v3 into the 1-based line it names in
// the YAML text (0 when it names none) and the message without the
// "yaml: line N:" prefix. Of a type error it takes the first.
func YAMLLine(err error) (line int, msg string) {
	msg = err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	if m := yamlLineRe.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n, m[2]
	}
	return 0, msg
}

// KeyLine returns the file line of key in a frontmatter node from Decode, or
// the node's own line.
func KeyLine(n *yaml.Node, key string) int {
	if n == nil {
		return 0
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i].Line
		}
	}
	return n.Line
}

// Encode renders v as frontmatter followed by body.
func Encode(v any, body []byte) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(delim + "\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	enc.Close()
	b.WriteString(delim + "\n")
	b.Write(body)
	return b.Bytes(), nil
}
