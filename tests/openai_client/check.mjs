// The npm client tests' runner: named checks run in order, each printed as it passes; the count at the end is what
// the GoogleTest launching the script looks for ("<name>: N passed"). A failing check throws out of the script.
export function checks(name) {
  let passed = 0;
  return {
    async check(what, fn) {
      await fn();
      passed++;
      console.log(`ok - ${what}`);
    },
    done() {
      console.log(`${name}: ${passed} passed`);
    },
  };
}
