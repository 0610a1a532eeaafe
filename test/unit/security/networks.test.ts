import { describe, expect, it } from 'vitest'
import {
  addressBucket,
  canonicalAddress,
  inNetworks,
  isCidr,
  isPublicAddress,
  networkBucket,
  networkMatcher,
} from '../../../src/security/networks.ts'

describe('networks', () => {
  it.each([
    '10.0.0.0/8',
    '192.168.1.1',
    '0.0.0.0/0',
    '::/0',
    'fd00::/8',
    '2001:db8::1',
    '::ffff:10.0.0.0/104',
    '[::1]',
  ])('accepts %s', (value) => expect(isCidr(value)).toBe(true))

  it.each([
    '',
    '10.0.0.0/33',
    '10.0.0',
    '0x7f.1',
    '010.1.1.1/8 ',
    'example.com',
    'fd00::/129',
    '10.0.0.0/8/8',
    '10.0.0.0/-1',
    '10.0.0.0/',
    '::1/a',
  ])('rejects %j', (value) => expect(isCidr(value)).toBe(false))

  it('matches IPv4, IPv6 and IPv4-mapped addresses; never an unknown or malformed one', () => {
    const match = networkMatcher(['10.0.0.0/8', '2001:db8::/32', '192.0.2.10'])
    expect(match('10.255.0.1')).toBe(true)
    expect(match('11.0.0.1')).toBe(false)
    expect(match('::ffff:10.1.1.1')).toBe(true)
    expect(match('::ffff:11.1.1.1')).toBe(false)
    expect(match('2001:db8:1::5')).toBe(true)
    expect(match('2001:db9::5')).toBe(false)
    expect(match('192.0.2.10')).toBe(true)
    expect(match('192.0.2.11')).toBe(false)
    expect(match(undefined)).toBe(false)
    expect(match('not an address')).toBe(false)
    expect(match('')).toBe(false)
  })

  it('an IPv4 range never matches an IPv6 address outside the mapped space', () => {
    expect(inNetworks('::a00:1', ['10.0.0.0/8'])).toBe(false)
    expect(inNetworks('::ffff:a00:1', ['10.0.0.0/8'])).toBe(true)
  })
})

describe('canonical addresses and throttling buckets', () => {
  it.each([
    ['10.0.0.1', '10.0.0.1'],
    ['::ffff:10.0.0.1', '10.0.0.1'],
    ['2001:0db8:0000:0000:0000:0000:0000:0001', '2001:db8::1'],
    ['[::1]', '::1'],
    ['010.0.0.1', undefined],
    ['256.1.1.1', undefined],
    ['1.2.3.4 5.6.7.8', undefined],
    ['not an address', undefined],
  ])('canonicalAddress(%j) is %j', (input, expected) => expect(canonicalAddress(input)).toBe(expected))

  it('buckets IPv6 by /64 and keeps IPv4 whole', () => {
    expect(addressBucket('192.0.2.7')).toBe('192.0.2.7')
    expect(addressBucket('2001:db8:1:2::5')).toBe('2001:db8:1:2::/64')
    expect(addressBucket('2001:db8:1:2:ffff:ffff:ffff:ffff')).toBe('2001:db8:1:2::/64')
  })
})

describe('#39 item 7 networkBucket: the wider network of an address', () => {
  it.each([
    ['192.0.2.7', '192.0.2.0/24'],
    ['192.0.2.255', '192.0.2.0/24'],
    ['::ffff:192.0.2.7', '192.0.2.0/24'],
    ['2001:db8:1:2::5', '2001:db8:1::/48'],
    ['2001:db8:1:ffff:ffff:ffff:ffff:ffff', '2001:db8:1::/48'],
    ['[2001:db8:abcd:12::1]', '2001:db8:abcd::/48'],
    ['not an address', undefined],
  ])('%s → %s', (address, bucket) => {
    expect(networkBucket(address)).toBe(bucket)
  })
})

describe('#27 item 9 isPublicAddress and IPv6 forms that embed an IPv4 address', () => {
  it.each([
    // IPv4-compatible (::/96, deprecated): refused whatever it embeds.
    ['::7f00:1', false],
    ['[::7f00:1]', false],
    ['::a00:1', false],
    ['::808:808', false],
    // IPv4-mapped: judged by the IPv4 address.
    ['::ffff:127.0.0.1', false],
    ['::ffff:7f00:1', false],
    ['::ffff:10.0.0.1', false],
    ['::ffff:8.8.8.8', true],
    // NAT64 well-known prefix (RFC 6052): judged by the IPv4 address.
    ['64:ff9b::7f00:1', false],
    ['64:ff9b::a9fe:a9fe', false],
    ['64:ff9b::c0a8:101', false],
    ['64:ff9b::808:808', true],
    // NAT64 local-use prefix (RFC 8215): refused.
    ['64:ff9b:1::808:808', false],
    // 6to4 (RFC 3056): judged by the IPv4 address in bits 16–47.
    ['2002:7f00:1::1', false],
    ['2002:a00:1::1', false],
    ['2002:a9fe:a9fe::', false],
    ['2002:808:808::1', true],
    // Teredo (RFC 4380) and IPv4-translated (RFC 6145): refused.
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', false],
    ['2001::7f00:1', false],
    ['::ffff:0:7f00:1', false],
    ['::ffff:0:808:808', false],
    // Plain addresses keep their verdicts.
    ['::', false],
    ['::1', false],
    ['fd00::1', false],
    ['fe80::1', false],
    ['127.0.0.1', false],
    ['8.8.8.8', true],
    ['2606:4700:4700::1111', true],
    ['example.com', undefined],
  ])('isPublicAddress(%j) is %j', (address, expected) => expect(isPublicAddress(address)).toBe(expected))

  it('a URL host in the IPv4-compatible form is what the check sees (URL keeps ::7f00:1)', () => {
    const host = new URL('https://[::127.0.0.1]/doc').hostname
    expect(host).toBe('[::7f00:1]')
    expect(isPublicAddress(host)).toBe(false)
  })
})
