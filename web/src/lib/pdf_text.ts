// PDF → text with Mozilla's PDF.js (pdfjs-dist), in its own lazily loaded chunk; its worker is an
// asset of this bundle, so nothing is fetched from anywhere but the server that served the UI.
import { getDocument, GlobalWorkerOptions } from 'pdfjs-dist';
import workerUrl from 'pdfjs-dist/build/pdf.worker.min.mjs?url';

GlobalWorkerOptions.workerSrc = workerUrl;

interface TextPiece {
  str?: string;
  hasEOL?: boolean;
}

export async function pdfText(name: string, data: ArrayBuffer): Promise<{ text: string; pages: number }> {
  // No font loading: only the text layer is wanted.
  const task = getDocument({ data: new Uint8Array(data), disableFontFace: true, useSystemFonts: false });
  try {
    let doc;
    try {
      doc = await task.promise;
    } catch (e) {
      throw new Error(`${name} could not be read as a PDF: ${e instanceof Error ? e.message : String(e)}`);
    }
    const pages: string[] = [];
    for (let p = 1; p <= doc.numPages; p++) {
      const page = await doc.getPage(p);
      const content = await page.getTextContent();
      let s = '';
      for (const item of content.items as TextPiece[]) {
        s += item.str ?? '';
        if (item.hasEOL) s += '\n';
      }
      pages.push(s.trim());
      page.cleanup();
    }
    const text = pages.filter(Boolean).join('\n\n');
    if (!text) throw new Error(`${name} has no text layer (a scanned PDF?): nothing to send`);
    return { text, pages: doc.numPages };
  } finally {
    await task.destroy(); // ends the worker's work on this document
  }
}
