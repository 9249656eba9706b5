package toolcall

import "testing"

func TestFirstValue(t *testing.T) {
	cases := []struct {
		name, in, want string
		ok             bool
	}{
		{"object", ` {"a":"}"} `, `{"a":"}"}`, true},
		{"array then more", `[1,{"b":"\"]"}] {"c":1}`, `[1,{"b":"\"]"}]`, true},
		{"escaped backslash before quote", `{"a":"\\"}x`, `{"a":"\\"}`, true},
		{"unclosed", `{"a":[1,2}`, "", false},
		{"unclosed string", `{"a":"b}`, "", false},
		{"mismatched brackets", `{"a":[1}]`, "", false},
		{"not a container", `"str"`, "", false},
		{"empty", "", "", false},
		{"invalid inside", `{a:1}`, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := firstValue([]byte(tc.in))
			if string(got) != tc.want || ok != tc.ok {
				t.Errorf("got %q, %v; want %q, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestMembersAndElements(t *testing.T) {
	var got []string
	for k, v := range members([]byte(` { "a" : 1 , "b\"" :{"x":[1,2]},"c":"s" , "d":null } `)[1:]) {
		got = append(got, string(k)+"="+string(v))
	}
	want := []string{`"a"=1`, `"b\""={"x":[1,2]}`, `"c"="s"`, `"d"=null`}
	if len(got) != len(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("member %d: got %q, want %q", i, got[i], want[i])
		}
	}
	got = got[:0]
	for e := range elements([]byte(`[ 1 ,"a,b", [true,false] ,{}]`)) {
		got = append(got, string(e))
	}
	want = []string{"1", `"a,b"`, "[true,false]", "{}"}
	if len(got) != len(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("element %d: got %q, want %q", i, got[i], want[i])
		}
	}
}
