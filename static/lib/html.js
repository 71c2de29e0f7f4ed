// html: htm bound to Preact's h, so views write markup as tagged templates (no build step).
import { h } from 'preact';
import htm from 'htm';

export const html = htm.bind(h);
