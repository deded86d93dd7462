// Open a page of the documentation site in Debian's headless Chromium (playwright-core
// from tests/browser/node_modules: no browser download) with no network, in one or more
// colour schemes, and report what it shows:
//
//   node docs_probe.mjs <playwright-core dir> <profile-dir> '<job JSON>'
//
// job: {"url": "file:///…/page.html", "shot": "/…/name" (a screenshot per scheme,
// name-<scheme>.png), "schemes": ["light", "dark"], "width": 1280, "views": true (wait for
// a live view's rows), "query": "words" (type them into the site's search and wait for
// results)}. Requests to anything but file:// and loopback are refused and listed, so a
// page that needs a CDN shows it. One JSON object per scheme goes to stdout, in a list;
// the pytest side does the asserting.
import { pathToFileURL } from "node:url";

const [pwDir, profile, jobText] = process.argv.slice(2);
const job = JSON.parse(jobText);
const { chromium } = await import(pathToFileURL(`${pwDir}/index.mjs`).href);

const context = await chromium.launchPersistentContext(profile, {
  executablePath: "/usr/bin/chromium",
  headless: true,
  viewport: { width: job.width || 1280, height: 900 },
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
});

// In the page: what of the notebook outputs (live views, the report) is wider than its
// box or than the page's content column, and which of their texts read poorly (WCAG
// contrast against the background they are drawn on).
function measure(minContrast) {
  const shown = (el) => el.getClientRects().length > 0;
  const rgba = (text) => {
    const m = text.match(/rgba?\(([^)]+)\)/);
    if (!m) return [0, 0, 0, 0];
    const p = m[1].split(/[\s,/]+/).filter(Boolean).map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const over = (top, under) => {
    const a = top[3];
    return [0, 1, 2].map((i) => top[i] * a + under[i] * (1 - a)).concat(1);
  };
  const background = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c[3] > 0) layers.push(c);
      if (c[3] >= 1) break;
    }
    let colour = [255, 255, 255, 1];
    for (const layer of layers.reverse()) colour = over(layer, colour);
    return colour;
  };
  const luminance = (c) => {
    const [r, g, b] = c.slice(0, 3).map((v) => {
      const s = v / 255;
      return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const contrast = (a, b) => {
    const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
    return (hi + 0.05) / (lo + 0.05);
  };
  const column = document.querySelector(".md-content__inner");
  const columnRight = column ? column.getBoundingClientRect().right : window.innerWidth;
  const outputs = [...document.querySelectorAll(".jp-OutputArea-output")].filter(
    (o) => shown(o) && o.querySelector(".jupyter-widgets, .tk-report"),
  );
  const overflow = [];
  const lowContrast = [];
  for (const out of outputs) {
    const kind = out.querySelector(".tk-report") ? "report" : "view";
    // the output, and the boxes of a view (which clip what does not fit) or the report's
    // root (its wide tables scroll in boxes of their own, by design)
    const boxes = [out, ...out.querySelectorAll(kind === "report" ? ".tk-report" : ".jupyter-widgets")];
    for (const box of boxes) {
      const right = box.getBoundingClientRect().right;
      // the order view wider than the column (amount, filled, average price, full times)
      // scrolls sideways in its own box, Cancel, id and status first, as in JupyterLab;
      // its rows then overflow into that box, never clipped: a box that clips is a defect
      const overflowX = getComputedStyle(box).overflowX;
      const scrolls = kind === "view" && ["auto", "scroll", "visible"].includes(overflowX);
      let scroller = null; // the view's box that scrolls sideways, if any
      for (let p = box.parentElement; kind === "view" && p && p !== out.parentElement; p = p.parentElement) {
        if (["auto", "scroll"].includes(getComputedStyle(p).overflowX)) { scroller = p; break; }
      }
      const reach = scroller ? scroller.getBoundingClientRect().left + scroller.scrollWidth : columnRight;
      const inside = scroller ? scroller.getBoundingClientRect().right <= columnRight + 1 : true;
      if ((box.scrollWidth > box.clientWidth + 1 && !scrolls) || right > reach + 1 || !inside) {
        overflow.push({ kind, box: String(box.className).slice(0, 60), scrollWidth: box.scrollWidth, clientWidth: box.clientWidth, right, columnRight });
        break;
      }
    }
    // every element of a view or the report that draws text of its own
    for (const el of out.querySelectorAll("*")) {
      const text = [...el.childNodes]
        .filter((n) => n.nodeType === Node.TEXT_NODE)
        .map((n) => n.textContent.trim())
        .join(" ")
        .trim();
      if (!text || !shown(el) || el.closest("details:not([open]) > :not(summary)")) continue;
      const style = getComputedStyle(el);
      if (style.visibility === "hidden" || Number(style.opacity) === 0) continue;
      const bg = background(el);
      const ratio = contrast(over(rgba(style.color), bg), bg);
      if (ratio < minContrast) {
        lowContrast.push({ kind, text: text.slice(0, 40), color: style.color, background: `rgb(${bg.slice(0, 3).map(Math.round)})`, ratio: Math.round(ratio * 100) / 100 });
      }
    }
  }
  const summaries = [...document.querySelectorAll(".tk-report summary")].filter(shown);
  return {
    colorScheme: document.body.getAttribute("data-md-color-scheme"),
    columnWidth: column ? Math.round(column.getBoundingClientRect().width) : null,
    widgetViews: document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]').length,
    widgets: document.querySelectorAll(".jupyter-widgets.widget-vbox, .jupyter-widgets.widget-container").length,
    tickerRows: [...document.querySelectorAll(".tk-row[data-symbol]")].filter(shown).map((r) => r.dataset.symbol),
    orderRows: [...document.querySelectorAll(".tk-orow[data-order]")].filter(shown).map((r) => r.dataset.order),
    status: [...document.querySelectorAll(".tk-status")].map((s) => s.textContent.trim()),
    loader: [...document.querySelectorAll("script[data-tk-widgets]")].map((s) => s.getAttribute("src")),
    reports: document.querySelectorAll(".tk-report").length,
    // an icon of the theme drawn over a report's section title
    summaryIcons: summaries.filter((s) => getComputedStyle(s, "::before").content !== "none").length,
    overflow,
    lowContrast: lowContrast.slice(0, 20),
  };
}

const results = [];
let blocked = [];
try {
  await context.route("**/*", (route) => {
    const u = route.request().url();
    if (u.startsWith("file:") || /^https?:\/\/127\.0\.0\.1[:/]/.test(u)) return route.continue();
    blocked.push(u);
    return route.abort();
  });
  for (const scheme of job.schemes || ["light"]) {
    const result = { scheme, blocked: [], consoleErrors: [], pageErrors: [], error: null };
    blocked = result.blocked;
    const page = await context.newPage();
    page.on("pageerror", (e) => result.pageErrors.push(String(e)));
    page.on("console", (m) => m.type() === "error" && result.consoleErrors.push(m.text()));
    try {
      // the theme follows the system's scheme until a reader picks one (kept in storage)
      await page.addInitScript(() => localStorage.clear());
      await page.emulateMedia({ colorScheme: scheme });
      await page.goto(job.url, { waitUntil: "load" });
      if (job.views) {
        try {
          await page.waitForSelector(".tk-orow[data-order], .tk-row[data-symbol]", { timeout: 30000 });
        } catch (e) {
          result.error = `no live view rendered: ${e.message.split("\n")[0]}`;
        }
        // every widget output of the page rendered: the manager puts its view in a
        // .widget-subarea just before the output's widget-view script
        await page.waitForFunction(
          () => [...document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]')].every(
            (s) => s.previousElementSibling?.matches(".widget-subarea") && s.previousElementSibling.childElementCount > 0,
          ),
          null,
          { timeout: 30000 },
        ).catch(() => {
          result.error ??= "not every widget output rendered";
        });
      }
      if (job.query) {
        await page.keyboard.press("/"); // the theme's shortcut: focus the search box
        await page.keyboard.type(job.query);
        try {
          await page.waitForSelector(".md-search-result__item", { timeout: 30000 });
        } catch (e) {
          result.error = `no search result: ${e.message.split("\n")[0]}`;
        }
        result.search = await page.evaluate(() => ({
          meta: document.querySelector(".md-search-result__meta")?.textContent.trim(),
          results: [...document.querySelectorAll(".md-search-result__item a")].map((a) => a.getAttribute("href")),
        }));
      }
      Object.assign(result, await page.evaluate(measure, job.minContrast || 3));
      if (job.shot) await page.screenshot({ path: `${job.shot}-${scheme}.png`, fullPage: !job.query });
    } catch (e) {
      result.error = String(e);
    } finally {
      await page.close();
    }
    results.push(result);
  }
} finally {
  await context.close();
}
console.log(JSON.stringify(results));
