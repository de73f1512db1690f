/** `npm run docs:configuration`: writes docs/configuration.md from the settings table. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../io/paths.js';
import { CONFIGURATION_DOC, configurationMarkdown } from './document.js';

writeFileSync(join(PACKAGE_ROOT, CONFIGURATION_DOC), configurationMarkdown());
process.stdout.write(`wrote ${CONFIGURATION_DOC}\n`);
