// Process warnings are bugs: fail the test that caused one.
import { afterEach } from "vitest";

const warnings: string[] = [];
process.on("warning", (w) => {
  warnings.push(`${w.name}: ${w.message}`);
});

afterEach(() => {
  if (warnings.length > 0) {
    const seen = warnings.splice(0);
    throw new Error(`process warning during test: ${seen.join("; ")}`);
  }
});
