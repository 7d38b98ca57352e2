package agent

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"time"
	"unicode"
)

// CalculatorArgs are the arguments of the calculator tool.
type CalculatorArgs struct {
	Expression string `json:"expression" desc:"an arithmetic expression with + - * / % ^, parentheses and decimal numbers, e.g. (12.5 + 3) * 4"`
}

// Calculator evaluates arithmetic exactly (rational numbers, so 1/3*3 is
// 1 and 123456789*987654321 has every digit): + - * / % (integers), ^ (an
// integer power), unary minus and parentheses. The result is an integer,
// or a decimal with up to 12 digits after the point.
func Calculator() *Tool {
	return MustTool("calculator", "Evaluate an arithmetic expression exactly.", func(ctx context.Context, a CalculatorArgs) (string, error) {
		v, err := Evaluate(a.Expression)
		if err != nil {
			return "", err
		}
		return formatRat(v), nil
	})
}

// DateArgs are the arguments of the dates tool.
type DateArgs struct {
	Date string `json:"date" desc:"a date as YYYY-MM-DD"`
	Add  int    `json:"add_days,omitempty" desc:"days to add (negative to subtract)"`
	To   string `json:"until,omitempty" desc:"a second date as YYYY-MM-DD: the answer is the days from date until it"`
}

// Dates does calendar arithmetic: the weekday of a date, a date plus a
// number of days, or the days between two dates. It never reads the clock.
func Dates() *Tool {
	return MustTool("dates", "Calendar arithmetic: weekday of a date, date plus days, or days between two dates.", func(ctx context.Context, a DateArgs) (string, error) {
		d, err := time.Parse(time.DateOnly, a.Date)
		if err != nil {
			return "", fmt.Errorf("date %q: want YYYY-MM-DD", a.Date)
		}
		if a.To != "" {
			e, err := time.Parse(time.DateOnly, a.To)
			if err != nil {
				return "", fmt.Errorf("until %q: want YYYY-MM-DD", a.To)
			}
			return fmt.Sprint(int(e.Sub(d).Hours() / 24)), nil
		}
		d = d.AddDate(0, 0, a.Add)
		return d.Format(time.DateOnly) + " " + d.Weekday().String(), nil
	})
}

// Builtin returns the built-in tools by name: "calculator" and "dates".
func Builtin(name string) (*Tool, error) {
	switch name {
	case "calculator":
		return Calculator(), nil
	case "dates":
		return Dates(), nil
	}
	return nil, fmt.Errorf("agent: no built-in tool %q (have: %s)", name, strings.Join(BuiltinNames(), ", "))
}

// BuiltinNames lists the built-in tools.
func BuiltinNames() []string {
	names := []string{"calculator", "dates"}
	sort.Strings(names)
	return names
}

// Evaluate computes an arithmetic expression exactly (see Calculator).
func Evaluate(expr string) (*big.Rat, error) {
	if len(expr) > 1000 {
		return nil, errors.New("expression longer than 1000 characters")
	}
	p := &exprParser{s: expr}
	v, err := p.sum()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i < len(p.s) {
		return nil, fmt.Errorf("unexpected %q at position %d", p.s[p.i:], p.i+1)
	}
	return v, nil
}

type exprParser struct {
	s     string
	i     int
	depth int
}

func (p *exprParser) space() {
	for p.i < len(p.s) && unicode.IsSpace(rune(p.s[p.i])) {
		p.i++
	}
}

func (p *exprParser) peek() byte {
	p.space()
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *exprParser) sum() (*big.Rat, error) {
	v, err := p.product()
	if err != nil {
		return nil, err
	}
	for {
		op := p.peek()
		if op != '+' && op != '-' {
			return v, nil
		}
		p.i++
		w, err := p.product()
		if err != nil {
			return nil, err
		}
		if op == '+' {
			v = new(big.Rat).Add(v, w)
		} else {
			v = new(big.Rat).Sub(v, w)
		}
	}
}

func (p *exprParser) product() (*big.Rat, error) {
	v, err := p.unary()
	if err != nil {
		return nil, err
	}
	for {
		op := p.peek()
		if op != '*' && op != '/' && op != '%' && op != 'x' {
			return v, nil
		}
		p.i++
		w, err := p.unary()
		if err != nil {
			return nil, err
		}
		switch op {
		case '*', 'x':
			v = new(big.Rat).Mul(v, w)
		case '/':
			if w.Sign() == 0 {
				return nil, errors.New("division by zero")
			}
			v = new(big.Rat).Quo(v, w)
		case '%':
			if !v.IsInt() || !w.IsInt() || w.Sign() == 0 {
				return nil, errors.New("% needs integers and a nonzero divisor")
			}
			v = new(big.Rat).SetInt(new(big.Int).Rem(v.Num(), w.Num()))
		}
	}
}

func (p *exprParser) power() (*big.Rat, error) {
	base, err := p.primary()
	if err != nil {
		return nil, err
	}
	if p.peek() != '^' {
		return base, nil
	}
	p.i++
	exp, err := p.unary() // right-associative, binds tighter than a unary minus on its left
	if err != nil {
		return nil, err
	}
	if !exp.IsInt() || exp.Num().BitLen() > 12 {
		return nil, errors.New("^ needs an integer exponent of at most 4096 in size")
	}
	n := exp.Num().Int64()
	if base.Sign() == 0 && n < 0 {
		return nil, errors.New("division by zero")
	}
	num := new(big.Int).Exp(base.Num(), big.NewInt(abs(n)), nil)
	den := new(big.Int).Exp(base.Denom(), big.NewInt(abs(n)), nil)
	if num.BitLen()+den.BitLen() > 1<<16 {
		return nil, errors.New("result too large")
	}
	if n < 0 {
		num, den = den, num
	}
	return new(big.Rat).SetFrac(num, den), nil
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

func (p *exprParser) unary() (*big.Rat, error) {
	switch p.peek() {
	case '-':
		p.i++
		v, err := p.unary()
		if err != nil {
			return nil, err
		}
		return new(big.Rat).Neg(v), nil
	case '+':
		p.i++
		return p.unary()
	}
	return p.power()
}

func (p *exprParser) primary() (*big.Rat, error) {
	switch p.peek() {
	case '(':
		p.depth++
		if p.depth > 100 {
			return nil, errors.New("parentheses nested too deeply")
		}
		p.i++
		v, err := p.sum()
		if err != nil {
			return nil, err
		}
		if p.peek() != ')' {
			return nil, fmt.Errorf("missing ) at position %d", p.i+1)
		}
		p.i++
		p.depth--
		return v, nil
	}
	start := p.i
	for p.i < len(p.s) && (p.s[p.i] >= '0' && p.s[p.i] <= '9' || p.s[p.i] == '.' || p.s[p.i] == ',' || p.s[p.i] == '_') {
		p.i++
	}
	if start == p.i {
		if p.i >= len(p.s) {
			return nil, errors.New("unexpected end of expression")
		}
		return nil, fmt.Errorf("unexpected %q at position %d", p.s[p.i:p.i+1], p.i+1)
	}
	lit := strings.NewReplacer(",", "", "_", "").Replace(p.s[start:p.i])
	v, ok := new(big.Rat).SetString(lit)
	if !ok {
		return nil, fmt.Errorf("bad number %q", p.s[start:p.i])
	}
	return v, nil
}

// formatRat writes an integer exactly, another value as a decimal with up
// to 12 digits after the point, trailing zeros removed.
func formatRat(v *big.Rat) string {
	if v.IsInt() {
		return v.Num().String()
	}
	s := v.FloatString(12)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}
