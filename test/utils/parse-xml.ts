/**
 * An XML document as a strict parser reads it: python3's xml.etree (expat), which refuses a
 * document that is not well-formed (python3 is already what test/ranklib's python rank runs on;
 * node_modules holds no XML parser). A parse error fails the calling test with the document.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';

export interface XmlNode {
  tag: string;
  attrs: Record<string, string>;
  text: string;
  children: XmlNode[];
}

export function parseXml(doc: string): XmlNode {
  const py = [
    'import json, sys, xml.etree.ElementTree as E',
    'def walk(e): return {"tag": e.tag, "attrs": dict(e.attrib), "text": e.text or "", "children": [walk(c) for c in e]}',
    'print(json.dumps(walk(E.fromstring(sys.stdin.buffer.read()))))',
  ].join('\n');
  const r = spawnSync('python3', ['-c', py], { input: doc, encoding: 'utf8' });
  assert.equal(r.status, 0, `not well-formed XML: ${r.stderr}\n${doc}`);
  return JSON.parse(r.stdout) as XmlNode;
}
