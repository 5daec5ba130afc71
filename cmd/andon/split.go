package main

import (
	"errors"
	"strings"
)

// splitCommandLine splits a command line such as the value of --stdio into
// argv with shell-like quoting, so that a server command can be given as one
// flag without running a shell (no expansion of variables, globs or ~, no
// pipes or redirections: every character means only what is listed here):
//
//   - unquoted spaces, tabs and newlines separate words;
//   - 'single quotes' keep everything inside literally;
//   - "double quotes" group too; inside them a backslash escapes only
//     " \ $ and ` (as in a POSIX shell) and is kept before anything else;
//   - outside quotes a backslash escapes the next character, and a
//     backslash before a newline joins the lines;
//   - quotes inside a word join with it: a"b c"d is the one word ab cd,
//     and a pair of quotes with nothing inside is an empty word.
func splitCommandLine(s string) ([]string, error) {
	var (
		words  []string
		word   strings.Builder
		inWord bool // a word has started, even if it is still empty ("")
	)
	end := func() {
		if inWord {
			words = append(words, word.String())
			word.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; ch {
		case ' ', '\t', '\n', '\r':
			end()
		case '\\':
			if i+1 == len(s) {
				return nil, errors.New("trailing backslash")
			}
			i++
			if s[i] == '\n' {
				continue // line continuation: neither a character nor a separator
			}
			word.WriteByte(s[i])
			inWord = true
		case '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated single quote")
			}
			word.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case '"':
			closed := false
			for i++; i < len(s); i++ {
				c := s[i]
				if c == '"' {
					closed = true
					break
				}
				if c == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
					c = s[i]
				}
				word.WriteByte(c)
			}
			if !closed {
				return nil, errors.New("unterminated double quote")
			}
			inWord = true
		default:
			word.WriteByte(ch)
			inWord = true
		}
	}
	end()
	return words, nil
}
