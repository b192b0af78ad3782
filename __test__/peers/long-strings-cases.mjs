// JSON texts with long strings (4 KiB and more: what the client lifts out
// of a frame instead of parsing; 1 MiB and more: external strings).
// Shared by the long-strings peer and its test.
const big = (unit, bytes) => unit.repeat(Math.ceil(bytes / Buffer.byteLength(unit)));
const str = (s) => JSON.stringify(s);

export const CASES = [
  ["plain ASCII", str(big("a", 5000))],
  ["just under the lift size", str(big("b", 4095))],
  ["exactly the lift size", str(big("c", 4096))],
  ["escapes", str(big("line\n", 5000) + '"quoted"\t\\ \u0001')],
  ["Latin-1, raw", str(big("é", 6000))],
  ["Latin-1, escaped", `"${big("caf\\u00e9 ", 6000)}"`],
  ["wide characters, raw", str(big("☃ 😀 ", 6000))],
  ["wide characters, escaped", `"${big("\\u2603 \\ud83d\\ude00 ", 8000)}"`],
  [
    "nested in objects and arrays",
    str({
      a: [1, { b: big("x", 5000) }, [big("y", 4500), "short"]],
      "": big("z", 4100),
      0: big("0", 4200),
      'k"ey': big("k", 4300),
      n: null,
      t: true,
      f: -1.5e3,
    }),
  ],
  ["a duplicate key on the path (the last one wins)", `{"d":{"t":${str(big("d", 5000))}},"d":{"x":1}}`],
  ["a duplicate key beside the path", `{"a":{"x":1,"x":2},"t":${str(big("e", 5000))}}`],
  ["a duplicate key at the string itself", `{"t":${str(big("f", 5000))},"t":"last"}`],
  ["a __proto__ key on the path", `{"__proto__":{"t":${str(big("p", 5000))}}}`],
  ["whitespace between tokens", `{ "a" : [ ${str(big("w", 5000))} , 1 ] , "b" : { } }`],
  ["the value is the string", str(big("s", 9000))],
  // 1 MiB and more: external strings where Node has them.
  ["1 MiB and more, ASCII", str(big("m", 1_200_000))],
  ["1 MiB and more, Latin-1", str(big("é", 2_200_000))],
  ["1 MiB and more, wide characters", str(big("☃", 1_800_000))],
  ["many strings", str(Array.from({ length: 40 }, (_, i) => big(String.fromCharCode(65 + (i % 26)), 4096 + i)))],
];

/** Cases that are events: data for a tool_result, whose `output` is any value. */
export const eventLine = (seq, i) =>
  `{"type":"event","seq":${seq},"name":"tool_result","data":{"turn":"t1","call":"c${i}","output":${CASES[i][1]},"error":false}}`;
