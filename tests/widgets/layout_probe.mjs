// Load a page of embedded live views in Debian's headless Chromium (playwright-core from
// tests/browser/node_modules: no browser download) at a given window size, and report
// every view element that lies outside its output area or whose text is clipped, plus a
// few computed colours; then take a full-page screenshot.
//
//   node layout_probe.mjs <page-url> <screenshot.png> <width> <height> <profile-dir> <playwright-core dir>
//
// Requests to anything but file:// are refused. One JSON object goes to stdout; the
// pytest side does the asserting.
import { pathToFileURL } from "node:url";

const [url, screenshot, width, height, profile, pwDir] = process.argv.slice(2);
const { chromium } = await import(pathToFileURL(`${pwDir}/index.mjs`).href);

const context = await chromium.launchPersistentContext(profile, {
  executablePath: "/usr/bin/chromium",
  headless: true,
  viewport: { width: Number(width), height: Number(height) },
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
});
const result = { problems: [], colours: {}, counts: {}, pageErrors: [], blocked: [], error: null };
try {
  await context.route("**/*", (route) => {
    const u = route.request().url();
    if (u.startsWith("file:")) return route.continue();
    result.blocked.push(u);
    return route.abort();
  });
  const page = context.pages()[0] || (await context.newPage());
  page.on("pageerror", (e) => result.pageErrors.push(String(e)));
  await page.goto(url);
  await page.waitForSelector(".tk-orow[data-order]", { timeout: 20000 });
  await page.waitForSelector(".tk-row[data-symbol]", { timeout: 20000 });
  await page.evaluate(() => document.fonts.ready);
  Object.assign(
    result,
    await page.evaluate(() => {
      const area = document.querySelector("#out").getBoundingClientRect();
      const problems = [];
      const shown = (el) => {
        const r = el.getBoundingClientRect();
        const style = getComputedStyle(el);
        return r.width > 0 && style.visibility !== "hidden" && style.display !== "none";
      };
      // a view narrower than its table scrolls sideways (its container, overflow auto):
      // what lies inside it must lie within what the scrolling reaches
      const scroller = (el) => {
        for (let p = el.parentElement; p && p.id !== "out"; p = p.parentElement) {
          const o = getComputedStyle(p).overflowX;
          if ((o === "auto" || o === "scroll") && p.scrollWidth > p.clientWidth + 1) return p;
        }
        return null;
      };
      const check = (el, what) => {
        if (!shown(el)) return;
        const r = el.getBoundingClientRect();
        const text = el.textContent.trim().slice(0, 80);
        const s = scroller(el);
        const box = s ? s.getBoundingClientRect() : null;
        const [left, right] = s ? [box.left - s.scrollLeft, box.left - s.scrollLeft + s.scrollWidth] : [area.left, area.right];
        if (r.left < left - 1 || r.right > right + 1 || (!s && r.right > window.innerWidth)) {
          problems.push({ what: `${what} outside`, text, left: r.left, right: r.right, area: [left, right] });
        }
        const grid = el.parentElement && el.parentElement.classList.contains("tk-grid") ? el.parentElement.getBoundingClientRect() : null;
        if (grid && (r.left < grid.left - 1 || r.right > grid.right + 1)) {
          problems.push({ what: `${what} outside its row`, text, left: r.left, right: r.right, row: [grid.left, grid.right] });
        }
        if (el.scrollWidth > el.clientWidth + 1) {
          problems.push({ what: `${what} clipped`, text, scrollWidth: el.scrollWidth, clientWidth: el.clientWidth });
        }
      };
      // the parts of a row (the table, the button-or-outcome cell) and of the filter bar
      document.querySelectorAll("#out .widget-hbox > *").forEach((e) => check(e, "part"));
      document.querySelectorAll(".tk-grid > span").forEach((e) => check(e, "cell"));
      document.querySelectorAll(".tk-badge, .tk-outcome, .tk-legend, .tk-status, .tk-counts").forEach((e) => check(e, "text"));
      document.querySelectorAll(".widget-button, .widget-dropdown, .widget-text").forEach((e) => check(e, "control"));
      // every Cancel button is in sight without scrolling sideways (its cell comes first)
      const cancels = [...document.querySelectorAll(".widget-button")].filter((b) => shown(b) && /ancel/.test(b.textContent));
      cancels.forEach((b) => {
        const r = b.getBoundingClientRect();
        if (r.left < area.left - 1 || r.right > area.right + 1 || r.right > window.innerWidth) {
          problems.push({ what: "Cancel out of sight", text: b.textContent.trim(), left: r.left, right: r.right, area: [area.left, area.right] });
        }
      });
      const colour = (selector, prop) => {
        const el = document.querySelector(selector);
        return el ? getComputedStyle(el)[prop] : null;
      };
      return {
        problems,
        area: [area.left, area.right],
        counts: {
          tickerRows: document.querySelectorAll(".tk-row[data-symbol]").length,
          orderRows: [...document.querySelectorAll(".tk-orow[data-order]")].filter(shown).length,
          buttons: cancels.length,
          scrolls: [...document.querySelectorAll("#out *")].some((e) => e.scrollWidth > e.clientWidth + 1 && ["auto", "scroll"].includes(getComputedStyle(e).overflowX)),
        },
        colours: {
          text: colour(".tk-row[data-symbol] .tk-sym", "color"),
          background: getComputedStyle(document.body).backgroundColor,
          open: colour(".tk-badge[data-status='OPEN']", "backgroundColor"),
          openText: colour(".tk-badge[data-status='OPEN']", "color"),
          up: colour(".tk-good", "color"),
          error: colour(".tk-err", "color"),
        },
      };
    }),
  );
  await page.screenshot({ path: screenshot, fullPage: true });
} catch (e) {
  result.error = String(e && e.stack ? e.stack : e);
} finally {
  await context.close();
}
console.log(JSON.stringify(result));
